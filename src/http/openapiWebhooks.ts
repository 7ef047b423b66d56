/** The webhook operations of the OpenAPI document (merged by openapi.ts). */
import { WEBHOOK_EVENT_TYPES } from '../domain/webhooks/events.ts';
import * as schemas from './schemas.ts';
import { createWebhookSchema, deliveriesQuery, recoverSchema, updateWebhookSchema } from './webhookSchemas.ts';

interface Helpers {
  error(description: string, codes: string[]): object;
  json(description: string, schema: object, headers?: object): object;
  body(schema: object): object;
  ref(name: string): object;
  idParam(name: string, prefix: string): object;
  common: Record<string | number, object>;
  bodyErrors: Record<string | number, object>;
}

const queryParams = (schema: { properties: Record<string, object> }) =>
  Object.entries(schema.properties).map(([name, s]) => ({ name, in: 'query', required: false, schema: s }));

export const webhookPaths = (h: Helpers) => {
  const notFound = h.error('Unknown endpoint id, or one of the other environment: details {webhook_id}.', [
    'WEBHOOK_NOT_FOUND',
  ]);
  const invalid = h.error(
    'Invalid request: details name each field (a malformed or non-https URL in production, a refused address, an unknown event type, an empty events list; on create, `body` when the environment has 16 endpoints already).',
    ['INVALID_REQUEST'],
  );
  const noBody = h.error('A body with members was sent (this operation takes none; {} or nothing).', [
    'INVALID_REQUEST',
  ]);
  const conflict = h.error('Another writer changed the endpoint meanwhile; retry.', ['CONCURRENT_MODIFICATION']);
  const op = (operationId: string, summary: string, extra: object) => ({
    summary,
    operationId,
    'x-rate-limit-group': 'other',
    'x-scope': 'webhooks:manage',
    ...extra,
  });
  const id = h.idParam('webhook_id', 'we_');
  return {
    '/webhooks': {
      post: op('createWebhook', 'Register a webhook endpoint (the secret is shown only here and on rotation)', {
        requestBody: h.body(createWebhookSchema),
        responses: {
          201: h.json('The endpoint, with its signing secret.', h.ref('WebhookEndpointWithSecret'), {
            Location: { schema: { type: 'string' } },
          }),
          400: invalid,
          ...h.bodyErrors,
          ...h.common,
        },
      }),
      get: op('listWebhooks', 'List the endpoints of this environment, newest first', {
        parameters: queryParams(schemas.pageQuery),
        responses: {
          200: h.json('A page of endpoints (no secrets).', h.ref('WebhookEndpointPage')),
          400: h.error('Invalid query.', ['INVALID_REQUEST']),
          ...h.common,
        },
      }),
    },
    '/webhooks/{webhook_id}': {
      get: op('getWebhook', 'Retrieve an endpoint (no secret)', {
        parameters: [id],
        responses: {
          200: h.json('The endpoint.', h.ref('WebhookEndpoint')),
          400: h.error('A query parameter was sent (this operation takes none).', ['INVALID_REQUEST']),
          404: notFound,
          ...h.common,
        },
      }),
      patch: op('updateWebhook', 'Change the URL, events, description, metadata or status (enabled/disabled)', {
        parameters: [id],
        requestBody: h.body(updateWebhookSchema),
        responses: {
          200: h.json('The endpoint as it is now.', h.ref('WebhookEndpoint')),
          400: invalid,
          404: notFound,
          409: conflict,
          ...h.bodyErrors,
          ...h.common,
        },
      }),
      delete: op('deleteWebhook', 'Delete an endpoint: deliveries not yet made are not made', {
        parameters: [id],
        responses: {
          200: h.json('Deleted.', {
            type: 'object',
            required: ['id', 'deleted'],
            properties: { id: { type: 'string' }, deleted: { const: true } },
          }),
          404: notFound,
          409: conflict,
          ...h.common,
        },
      }),
    },
    '/webhooks/{webhook_id}/rotate-secret': {
      post: op('rotateWebhookSecret', 'A new signing secret; the previous one keeps signing beside it for 24 hours', {
        parameters: [id],
        responses: {
          200: h.json('The new secret (shown only here).', {
            type: 'object',
            required: ['secret', 'previous_secret_expires_at'],
            properties: {
              secret: { type: 'string', pattern: '^whsec_' },
              previous_secret_expires_at: { type: 'string', format: 'date-time' },
            },
          }),
          400: noBody,
          404: notFound,
          409: conflict,
          ...h.common,
        },
      }),
    },
    '/webhooks/{webhook_id}/deliveries': {
      get: op('listWebhookDeliveries', 'Deliveries to an endpoint with their attempts, newest first', {
        description:
          'A delivery is listed once its first attempt has been answered, or at the latest 2 s after the service read its event (then as pending while that attempt is under way).',
        parameters: [id, ...queryParams(deliveriesQuery)],
        responses: {
          200: h.json('A page of deliveries.', h.ref('WebhookDeliveryPage')),
          400: h.error('Invalid query.', ['INVALID_REQUEST']),
          404: notFound,
          ...h.common,
        },
      }),
    },
    '/webhooks/{webhook_id}/deliveries/{delivery_id}/resend': {
      post: op('resendWebhookDelivery', 'A new attempt now, with the same webhook-id and body', {
        parameters: [id, h.idParam('delivery_id', 'msg_')],
        responses: {
          202: h.json('The delivery, pending again.', h.ref('WebhookDelivery')),
          400: noBody,
          404: h.error('Unknown endpoint (details {webhook_id}) or delivery (details {webhook_id, delivery_id}).', [
            'WEBHOOK_NOT_FOUND',
            'WEBHOOK_DELIVERY_NOT_FOUND',
          ]),
          ...h.common,
        },
      }),
    },
    '/webhooks/{webhook_id}/recover': {
      post: op('recoverWebhookDeliveries', 'Re-queue every failed delivery created since a time', {
        parameters: [id],
        requestBody: h.body(recoverSchema),
        responses: {
          202: h.json('How many deliveries were re-queued (at most 10,000 per call).', {
            type: 'object',
            required: ['recovered'],
            properties: { recovered: { type: 'integer', minimum: 0 } },
          }),
          400: h.error('Invalid request (since missing or not a timestamp).', ['INVALID_REQUEST']),
          404: notFound,
          ...h.bodyErrors,
          ...h.common,
        },
      }),
    },
    '/webhooks/{webhook_id}/test': {
      post: op('sendWebhookTest', 'Send a webhook.test event to this endpoint', {
        parameters: [id],
        responses: {
          202: h.json('The test delivery, pending.', h.ref('WebhookDelivery')),
          400: noBody,
          404: notFound,
          ...h.common,
        },
      }),
    },
  };
};

const endpoint = {
  type: 'object',
  required: ['id', 'url', 'events', 'description', 'metadata', 'status', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', pattern: '^we_' },
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES, '*'] } },
    description: { type: ['string', 'null'] },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    status: { type: 'string', enum: ['enabled', 'disabled'] },
    disabled_reason: {
      type: 'string',
      description:
        'Present when the service disabled it: the receiver answered 410, or every delivery failed for 5 days',
    },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
};

const delivery = {
  type: 'object',
  required: ['id', 'event_id', 'event_type', 'status', 'attempts', 'next_attempt_at', 'created_at'],
  properties: {
    id: { type: 'string', pattern: '^msg_' },
    event_id: { type: 'string', pattern: '^evt_', description: 'The webhook-id header of every attempt' },
    event_type: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
    attempts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['at', 'duration_ms'],
        properties: {
          at: { type: 'string', format: 'date-time' },
          response_status: { type: 'integer', description: 'The HTTP status the receiver answered' },
          error: { type: 'string', description: 'Why no HTTP answer came: timeout, connection failed, refused target' },
          duration_ms: { type: 'integer' },
        },
      },
    },
    next_attempt_at: {
      type: ['string', 'null'],
      format: 'date-time',
      description:
        'When the next attempt is due; null once final, or while an earlier event of the same voucher is pending',
    },
    failure_reason: {
      type: 'string',
      description:
        'Failed without an attempt: the endpoint was disabled or deleted (or the event body is missing from a damaged store)',
    },
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const webhookSchemas = {
  WebhookDelivery: delivery,
  WebhookDeliveryPage: {
    type: 'object',
    required: ['data', 'total', 'limit', 'offset', 'has_more'],
    properties: {
      data: { type: 'array', items: { $ref: '#/components/schemas/WebhookDelivery' } },
      total: { type: 'integer' },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
      has_more: { type: 'boolean' },
    },
  },
  WebhookEndpoint: endpoint,
  WebhookEndpointWithSecret: {
    ...endpoint,
    required: [...endpoint.required, 'secret'],
    properties: {
      ...endpoint.properties,
      secret: { type: 'string', pattern: '^whsec_', description: 'whsec_ + base64 of 32 random bytes' },
    },
  },
  WebhookEndpointPage: {
    type: 'object',
    required: ['data', 'total', 'limit', 'offset', 'has_more'],
    properties: {
      data: { type: 'array', items: { $ref: '#/components/schemas/WebhookEndpoint' } },
      total: { type: 'integer' },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
      has_more: { type: 'boolean' },
    },
  },
};
