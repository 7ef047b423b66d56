import { randomBytes } from 'node:crypto';
import { DomainError } from '../../domain/errors.ts';
import { decide, endpointNotFound, type Endpoint, type EndpointCommand } from '../../domain/webhooks/endpoint.ts';
import { webhookStream, type EndpointStatus } from '../../domain/webhooks/events.ts';
import type { WebhookEndpointDoc } from '../../projections/webhookEndpoints.ts';
import type { CallMetadata, EnvContext } from '../context.ts';
import { randomBase62 } from '../ids.ts';
import type { Page } from '../queries.ts';

/** A signing secret: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form). */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
export const newEndpointId = (): string => `we_${randomBase62(20)}`;

export interface EndpointInput {
  url?: string;
  events?: string[];
  description?: string | null;
  metadata?: Record<string, string>;
  status?: EndpointStatus;
}

/** The endpoint as the API shows it; the secret only where the caller may see it (creation, rotation). */
export const renderEndpoint = (
  e: Pick<
    Endpoint,
    'id' | 'url' | 'events' | 'description' | 'metadata' | 'status' | 'disabledReason' | 'createdAt' | 'updatedAt'
  >,
): Record<string, unknown> => ({
  id: e.id,
  url: e.url,
  events: e.events,
  description: e.description,
  metadata: e.metadata ?? {},
  status: e.status,
  ...(e.disabledReason ? { disabled_reason: e.disabledReason } : {}),
  created_at: e.createdAt,
  updated_at: e.updatedAt,
});

const fromDoc = (d: WebhookEndpointDoc): Record<string, unknown> =>
  renderEndpoint({
    id: d.id,
    url: d.url,
    events: d.events,
    description: d.description,
    metadata: d.metadata,
    status: d.status,
    disabledReason: d.disabled_reason,
    createdAt: d.created_at,
    updatedAt: d.updated_at,
  });

const run = async (ctx: EnvContext, endpointId: string, command: EndpointCommand, meta: CallMetadata) => {
  const { result, position } = await ctx.webhooks.endpoints.execute(webhookStream(endpointId), {
    decide: (state) => decide(command, state),
    result: (state) => state!,
    metadata: { ...meta },
  });
  // the list (core group) and the publisher (which signs and stops deliveries) see it before the answer
  await ctx.projector.waitFor(position, ctx.readYourWritesMs);
  await ctx.webhooks.publisher?.waitFor(position, ctx.readYourWritesMs);
  return result;
};

/**
 * The most endpoints an environment may have: every voucher event fans out to each of them, so
 * the count bounds what one event costs to deliver (Stripe's default is also 16 per mode).
 */
export const MAX_ENDPOINTS = 16;

/** Creations per environment, one at a time, so that two at once cannot both pass the count. */
const creating = new WeakMap<EnvContext, Promise<unknown>>();

export const createEndpoint = (
  ctx: EnvContext,
  input: EndpointInput & { url: string; events: string[] },
  meta: CallMetadata,
): Promise<Record<string, unknown>> => {
  const previous = creating.get(ctx) ?? Promise.resolve();
  const next = previous.catch(() => undefined).then(() => createWithinLimit(ctx, input, meta));
  creating.set(ctx, next);
  return next;
};

const createWithinLimit = async (
  ctx: EnvContext,
  input: EndpointInput & { url: string; events: string[] },
  meta: CallMetadata,
): Promise<Record<string, unknown>> => {
  // The list is up to date with every creation and deletion answered (read-your-writes in run).
  const count = await ctx.reads.count('webhook_endpoints');
  if (count >= MAX_ENDPOINTS) {
    throw new DomainError(
      'INVALID_REQUEST',
      `This environment already has ${count} webhook endpoints, the most it may have; delete one first`,
      [{ field: 'body', message: `at most ${MAX_ENDPOINTS} webhook endpoints per environment` }],
    );
  }
  const endpointId = newEndpointId();
  const secret = newSecret();
  const endpoint = await run(
    ctx,
    endpointId,
    {
      type: 'CreateEndpoint',
      data: { ...input, endpointId, secret },
      metadata: { now: ctx.clock.now(), policy: ctx.webhooks.policy },
    },
    meta,
  );
  return { ...renderEndpoint(endpoint), secret };
};

export const updateEndpoint = async (
  ctx: EnvContext,
  endpointId: string,
  input: EndpointInput,
  meta: CallMetadata,
): Promise<Record<string, unknown>> =>
  renderEndpoint(
    await run(
      ctx,
      endpointId,
      {
        type: 'UpdateEndpoint',
        data: { ...input, endpointId },
        metadata: { now: ctx.clock.now(), policy: ctx.webhooks.policy },
      },
      meta,
    ),
  );

export const rotateSecret = async (
  ctx: EnvContext,
  endpointId: string,
  meta: CallMetadata,
): Promise<{ secret: string; previous_secret_expires_at: string }> => {
  const secret = newSecret();
  const endpoint = await run(
    ctx,
    endpointId,
    { type: 'RotateSecret', data: { endpointId, secret }, metadata: { now: ctx.clock.now() } },
    meta,
  );
  return { secret, previous_secret_expires_at: endpoint.secrets[1]!.expiresAt! };
};

export const deleteEndpoint = async (
  ctx: EnvContext,
  endpointId: string,
  meta: CallMetadata,
): Promise<{ id: string; deleted: true }> => {
  await run(
    ctx,
    endpointId,
    { type: 'DeleteEndpoint', data: { endpointId }, metadata: { now: ctx.clock.now() } },
    meta,
  );
  return { id: endpointId, deleted: true };
};

/** The service disables an endpoint (410, or 5 days of failures); a no-op when it is not enabled. */
export const disableEndpoint = async (ctx: EnvContext, endpointId: string, reason: string): Promise<void> => {
  try {
    await ctx.webhooks.endpoints.execute(webhookStream(endpointId), {
      decide: (state) =>
        decide({ type: 'DisableEndpoint', data: { endpointId, reason }, metadata: { now: ctx.clock.now() } }, state),
      result: () => undefined,
      metadata: { correlationId: 'webhook-dispatcher' },
    });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
  }
};

export const getEndpoint = async (ctx: EnvContext, endpointId: string): Promise<Record<string, unknown>> => {
  const doc = await ctx.reads.get<WebhookEndpointDoc>('webhook_endpoints', endpointId);
  if (!doc) throw endpointNotFound(endpointId);
  return fromDoc(doc);
};

export const listEndpoints = async (
  ctx: EnvContext,
  limit: number,
  offset: number,
): Promise<Page<Record<string, unknown>>> => {
  const [docs, total] = await Promise.all([
    ctx.reads.find<WebhookEndpointDoc>('webhook_endpoints', {}, { sort: [['created_seq', -1]], skip: offset, limit }),
    ctx.reads.count('webhook_endpoints'),
  ]);
  return { data: docs.map(fromDoc), total, limit, offset, has_more: offset + docs.length < total };
};
