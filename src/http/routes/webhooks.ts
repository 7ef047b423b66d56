import type { Request } from 'express';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
  type EndpointInput,
} from '../../application/webhooks/endpoints.ts';
import { endpointNotFound } from '../../domain/webhooks/endpoint.ts';
import {
  deliveryNotFound,
  listDeliveries,
  recoverDeliveries,
  resendDelivery,
  sendTestEvent,
} from '../../application/webhooks/deliveries.ts';
import type { DeliveryStatus } from '../../domain/webhooks/delivery.ts';
import type { Guard } from '../auth.ts';
import type { Routes } from './mount.ts';
import * as schemas from '../schemas.ts';
import { compileBody, compileQuery } from '../validation.ts';
import {
  createWebhookSchema,
  deliveriesQuery,
  noBodySchema,
  recoverSchema,
  updateWebhookSchema,
} from '../webhookSchemas.ts';

const parseCreate = compileBody<EndpointInput & { url: string; events: string[] }>(createWebhookSchema);
const parseUpdate = compileBody<EndpointInput>(updateWebhookSchema);
const parsePage = compileQuery<{ limit: number; offset: number }>(schemas.pageQuery);
const parseNoQuery = compileQuery<Record<string, never>>(schemas.emptyQuery);

const parseDeliveries = compileQuery<{ limit: number; offset: number; status?: DeliveryStatus }>(deliveriesQuery);
const parseRecover = compileBody<{ since: string }>(recoverSchema);
const parseNoBody = compileBody<Record<string, never>>(noBodySchema);

const ENDPOINT_ID = /^we_[A-Za-z0-9]{1,64}$/;
const DELIVERY_ID = /^msg_[A-Za-z0-9]{1,64}$/;

/** A malformed id is as unknown as any other (404 WEBHOOK_NOT_FOUND). */
const endpointIdOf = (req: Request): string => {
  const id = String(req.params.webhookId);
  if (!ENDPOINT_ID.test(id)) throw endpointNotFound(id);
  return id;
};

const meta = (req: Request) => ({ correlationId: req.requestId, apiKeyId: req.apiKey.id });

/** The /webhooks routes (scope webhooks:manage, rate limit group `other`), in the key's environment. */
export const webhookRoutes = (routes: Routes, guard: Guard): void => {
  const manage = () => guard('webhooks:manage', 'other');

  routes.post('/webhooks', manage(), async (req, res) => {
    const view = await createEndpoint(req.ctx, parseCreate(req.body), meta(req));
    res
      .status(201)
      .location(`/v1/webhooks/${String(view.id)}`)
      .json(view);
  });

  routes.get('/webhooks', manage(), async (req, res) => {
    const page = parsePage({ ...req.query });
    res.json(await listEndpoints(req.ctx, page.limit, page.offset));
  });

  routes.get('/webhooks/:webhookId', manage(), async (req, res) => {
    parseNoQuery({ ...req.query });
    res.json(await getEndpoint(req.ctx, endpointIdOf(req)));
  });

  routes.patch('/webhooks/:webhookId', manage(), async (req, res) => {
    const id = endpointIdOf(req);
    res.json(await updateEndpoint(req.ctx, id, parseUpdate(req.body), meta(req)));
  });

  routes.delete('/webhooks/:webhookId', manage(), async (req, res) => {
    res.json(await deleteEndpoint(req.ctx, endpointIdOf(req), meta(req)));
  });

  routes.post('/webhooks/:webhookId/rotate-secret', manage(), async (req, res) => {
    parseNoBody(req.body ?? {});
    res.json(await rotateSecret(req.ctx, endpointIdOf(req), meta(req)));
  });

  routes.get('/webhooks/:webhookId/deliveries', manage(), async (req, res) => {
    const id = endpointIdOf(req);
    res.json(await listDeliveries(req.ctx, id, parseDeliveries({ ...req.query })));
  });

  routes.post('/webhooks/:webhookId/deliveries/:deliveryId/resend', manage(), async (req, res) => {
    const id = endpointIdOf(req);
    const deliveryId = String(req.params.deliveryId);
    parseNoBody(req.body ?? {});
    if (!DELIVERY_ID.test(deliveryId)) throw deliveryNotFound(id, deliveryId);
    res.status(202).json(await resendDelivery(req.ctx, id, deliveryId));
  });

  routes.post('/webhooks/:webhookId/recover', manage(), async (req, res) => {
    const id = endpointIdOf(req);
    const { since } = parseRecover(req.body);
    res.status(202).json(await recoverDeliveries(req.ctx, id, since));
  });

  routes.post('/webhooks/:webhookId/test', manage(), async (req, res) => {
    parseNoBody(req.body ?? {});
    res.status(202).json(await sendTestEvent(req.ctx, endpointIdOf(req)));
  });
};
