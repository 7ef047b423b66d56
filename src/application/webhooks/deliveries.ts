import { DomainError } from '../../domain/errors.ts';
import { isoSeconds } from '../../domain/clock.ts';
import type { DeliveryStatus } from '../../domain/webhooks/delivery.ts';
import { endpointNotFound } from '../../domain/webhooks/endpoint.ts';
import { TEST_EVENT_TYPE } from '../../domain/webhooks/events.ts';
import type { WriteBatch } from '../../core/readStore.ts';
import type { EnvContext, WebhookContext } from '../context.ts';
import { randomBase62 } from '../ids.ts';
import type { Page } from '../queries.ts';
import {
  DELIVERIES,
  PAYLOADS,
  pendingKey,
  type DeliveryControl,
  type DeliveryDoc,
  type DeliveryFilter,
  type DeliveryStore,
} from './deliveryStore.ts';
import { deliveryIdOf } from './publisher.ts';

/** Deliveries that ended (succeeded or failed) are kept this long after their event, then removed. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3_600_000;
const PURGE_PAGE = 1_000;

/**
 * Removes the deliveries (with their attempts) that ended and whose event is older than
 * DELIVERY_RETENTION_MS, and the bodies of events none of whose deliveries is left; pending ones
 * are kept whatever their age. Run by the housekeeping job.
 */
export const purgeDeliveries = async (ctx: EnvContext): Promise<number> => {
  const control = ctx.webhooks.control;
  if (!control) return 0;
  return control.purge(ctx.clock.now().getTime() - DELIVERY_RETENTION_MS);
};

/** Most failed deliveries one recover call re-queues (call it again with a later `since` for more). */
export const MAX_RECOVER = 10_000;

export const deliveryNotFound = (endpointId: string, deliveryId: string): DomainError =>
  new DomainError('WEBHOOK_DELIVERY_NOT_FOUND', `Delivery ${deliveryId} of ${endpointId} was not found`, {
    webhook_id: endpointId,
    delivery_id: deliveryId,
  });

export const renderDelivery = (d: DeliveryDoc): Record<string, unknown> => ({
  id: d.id,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at:
    d.status === 'pending' && d.next_attempt_at !== null ? isoSeconds(new Date(d.next_attempt_at)) : null,
  ...(d.failure_reason ? { failure_reason: d.failure_reason } : {}),
  created_at: d.created_at,
});

type Running = Required<Pick<WebhookContext, 'deliveries' | 'control'>>;

/** The endpoint must exist in this environment; deliveries need the publisher's store. */
const endpointOf = async (ctx: EnvContext, endpointId: string): Promise<Running> => {
  if (!(await ctx.reads.get('webhook_endpoints', endpointId))) throw endpointNotFound(endpointId);
  const { deliveries, control } = ctx.webhooks;
  if (!deliveries || !control) throw new Error('webhook delivery is not running in this process');
  return { deliveries, control };
};

export const listDeliveries = async (
  ctx: EnvContext,
  endpointId: string,
  q: { status?: DeliveryStatus; limit: number; offset: number },
): Promise<Page<Record<string, unknown>>> => {
  const { deliveries } = await endpointOf(ctx, endpointId);
  const filter: DeliveryFilter = { endpoint_id: endpointId, ...(q.status ? { status: q.status } : {}) };
  const [docs, total] = await Promise.all([
    deliveries.find(filter, { skip: q.offset, limit: q.limit }),
    deliveries.count(filter),
  ]);
  return {
    data: docs.map(renderDelivery),
    total,
    limit: q.limit,
    offset: q.offset,
    has_more: q.offset + docs.length < total,
  };
};

/** A new attempt now, with the same webhook-id and body (whatever the delivery's status). */
export const resendDelivery = async (
  ctx: EnvContext,
  endpointId: string,
  deliveryId: string,
): Promise<Record<string, unknown>> => {
  const { control } = await endpointOf(ctx, endpointId);
  const doc = await control.resend(endpointId, deliveryId, ctx.clock.now().getTime());
  if (!doc) throw deliveryNotFound(endpointId, deliveryId);
  return renderDelivery(doc);
};

/**
 * Re-queues the endpoint's failed deliveries created at or after `since`, oldest first, keeping
 * the order per voucher: of each voucher's, only the earliest goes at once (and none while one of
 * that voucher is still pending); the others wait their turn.
 */
export const recoverDeliveries = async (
  ctx: EnvContext,
  endpointId: string,
  since: string,
): Promise<{ recovered: number }> => {
  const { control } = await endpointOf(ctx, endpointId);
  return { recovered: await control.recover(endpointId, Date.parse(since), ctx.clock.now().getTime()) };
};

/** A `webhook.test` event to this endpoint alone, whatever it subscribes to. */
export const sendTestEvent = async (ctx: EnvContext, endpointId: string): Promise<Record<string, unknown>> => {
  const { control } = await endpointOf(ctx, endpointId);
  const now = ctx.clock.now();
  const eventId = `evt_test_${randomBase62(24)}`;
  const createdAt = isoSeconds(now);
  const doc: DeliveryDoc = {
    id: deliveryIdOf(eventId, endpointId),
    endpoint_id: endpointId,
    event_id: eventId,
    event_type: TEST_EVENT_TYPE,
    order_key: eventId,
    seq: 0,
    payload: JSON.stringify({
      id: eventId,
      type: TEST_EVENT_TYPE,
      created_at: createdAt,
      environment: ctx.environment,
      data: { webhook_id: endpointId },
    }),
    status: 'pending',
    next_attempt_at: now.getTime(),
    attempts: [],
    created_at: createdAt,
    created_ms: now.getTime(),
  };
  await control.add(doc);
  return renderDelivery(doc);
};

/** DeliveryControl on a delivery store and the dispatcher working from it, in this thread. */
export const localDeliveryControl = (
  deliveries: DeliveryStore,
  dispatcher: { wake(refill?: boolean): void; resent?(deliveryId: string): void },
): DeliveryControl => ({
  resend: async (endpointId, deliveryId, now) => {
    const doc = await deliveries.exclusive(async () => {
      const current = await deliveries.get(deliveryId);
      if (!current || current.endpoint_id !== endpointId) return null;
      const { failure_reason: _reason, ...rest } = current;
      const next: DeliveryDoc = { ...rest, status: 'pending', next_attempt_at: now };
      await deliveries.write({ upserts: [{ collection: DELIVERIES, doc: next }] });
      return next;
    });
    if (doc) {
      dispatcher.resent?.(deliveryId);
      dispatcher.wake(true);
    }
    return doc;
  },
  recover: async (endpointId, sinceMs, now) => {
    const recovered = await deliveries.exclusive(async () => {
      const failed = await deliveries.failedSince(endpointId, sinceMs, MAX_RECOVER);
      const write: WriteBatch = { upserts: [] };
      // the keys pending before, then each key a recovered delivery makes pending: its later ones wait
      const pending = await deliveries.pendingKeys(failed);
      for (const d of failed) {
        const key = pendingKey(endpointId, d.order_key);
        const waits = pending.has(key);
        pending.add(key);
        const { failure_reason: _reason, ...rest } = d;
        write.upserts!.push({
          collection: DELIVERIES,
          doc: { ...rest, status: 'pending', next_attempt_at: waits ? null : now },
        });
      }
      if (failed.length > 0) await deliveries.write(write);
      return failed.length;
    });
    dispatcher.wake(true);
    return recovered;
  },
  add: async (doc) => {
    await deliveries.exclusive(() => deliveries.write({ upserts: [{ collection: DELIVERIES, doc }] }));
    dispatcher.wake(true);
  },
  purge: async (cutoffMs) => {
    let removed = 0;
    for (;;) {
      // A page is read and removed in one exclusive section: a resend or recover of one of its
      // deliveries (pending again) comes before the read, and the delivery is not in the page, or
      // after the removal, and answers that the delivery is gone.
      const page = await deliveries.exclusive(async () => {
        const old = await deliveries.endedBefore(cutoffMs, PURGE_PAGE);
        if (old.length === 0) return 0;
        const bodies = await deliveries.unreferencedPayloads(old);
        await deliveries.write({
          deletes: [
            ...old.map((d) => ({ collection: DELIVERIES, id: d.id })),
            ...bodies.map((id) => ({ collection: PAYLOADS, id })),
          ],
        });
        return old.length;
      });
      if (page === 0) return removed;
      removed += page;
    }
  },
});
