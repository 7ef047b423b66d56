/**
 * Deliveries as documents of the DELIVERIES collection of a ReadStore (any implementation of the
 * port): the MongoDB stack's delivery storage. Every write is the ReadStore's batch, so deliveries,
 * the other collections, the checkpoint and the fence commit together.
 */
import type { Filter, ReadStore, WriteBatch } from '../../core/readStore.ts';
import {
  checkDelivery,
  DELIVERIES,
  pendingKey,
  type DeliveryDoc,
  type DeliveryFilter,
  type DeliveryKey,
  type DeliveryStorage,
} from '../../domain/webhooks/deliveryStorage.ts';

const filterOf = (filter: DeliveryFilter): Filter => ({
  ...(filter.endpoint_id !== undefined ? { endpoint_id: filter.endpoint_id } : {}),
  ...(filter.status !== undefined ? { status: filter.status } : {}),
});

export class ReadStoreDeliveries implements DeliveryStorage {
  constructor(readonly store: ReadStore) {}

  async start(): Promise<void> {
    await this.store.ensureIndex(DELIVERIES, ['status', 'next_attempt_at']);
    await this.store.ensureIndex(DELIVERIES, ['endpoint_id', 'order_key', 'status', 'seq']);
    await this.store.ensureIndex(DELIVERIES, ['endpoint_id', 'created_ms']);
    await this.store.ensureIndex(DELIVERIES, ['endpoint_id', 'status', 'created_ms']);
    await this.store.ensureIndex(DELIVERIES, ['status', 'created_ms']);
  }

  get(id: string): Promise<DeliveryDoc | null> {
    return this.store.get<DeliveryDoc>(DELIVERIES, id);
  }

  getMany(ids: readonly string[]): Promise<Map<string, DeliveryDoc>> {
    return this.store.getMany<DeliveryDoc>(DELIVERIES, [...ids]);
  }

  /** One query per distinct key: each ends at its first match on the (endpoint, key, status, seq) index. */
  async pendingKeys(keys: readonly DeliveryKey[]): Promise<Set<string>> {
    const found = new Set<string>();
    const names = new Map(keys.map((k) => [pendingKey(k.endpoint_id, k.order_key), k]));
    for (const [name, { endpoint_id: endpointId, order_key: orderKey }] of names) {
      const hit = await this.store.find<DeliveryDoc>(
        DELIVERIES,
        { endpoint_id: endpointId, order_key: orderKey, status: 'pending' },
        // in the index's order: the first match ends the search (ordered by id, every match of the key is read and sorted)
        { sort: [['seq', 1]], limit: 1 },
      );
      if (hit.length > 0) found.add(name);
    }
    return found;
  }

  async firstWaiting(endpointId: string, orderKey: string): Promise<DeliveryDoc | null> {
    const [next] = await this.store.find<DeliveryDoc>(
      DELIVERIES,
      { endpoint_id: endpointId, order_key: orderKey, status: 'pending', next_attempt_at: null },
      { sort: [['seq', 1]], limit: 1 },
    );
    return next ?? null;
  }

  due(now: number, limit: number): Promise<DeliveryDoc[]> {
    return this.store.find<DeliveryDoc>(
      DELIVERIES,
      { status: 'pending', next_attempt_at: { $lte: now } },
      { sort: [['next_attempt_at', 1]], limit },
    );
  }

  async nextDueAt(after: number): Promise<number | null> {
    const [next] = await this.store.find<DeliveryDoc>(
      DELIVERIES,
      { status: 'pending', next_attempt_at: { $gt: after } },
      { sort: [['next_attempt_at', 1]], limit: 1 },
    );
    return next?.next_attempt_at ?? null;
  }

  list(filter: DeliveryFilter, page: { skip: number; limit: number }): Promise<DeliveryDoc[]> {
    return this.store.find<DeliveryDoc>(DELIVERIES, filterOf(filter), {
      sort: [
        ['created_ms', -1],
        ['seq', -1],
      ],
      ...page,
    });
  }

  count(filter: DeliveryFilter): Promise<number> {
    return this.store.count(DELIVERIES, filterOf(filter));
  }

  failedSince(endpointId: string, sinceMs: number, limit: number): Promise<DeliveryDoc[]> {
    return this.store.find<DeliveryDoc>(
      DELIVERIES,
      { endpoint_id: endpointId, status: 'failed', created_ms: { $gte: sinceMs } },
      { sort: [['seq', 1]], limit },
    );
  }

  endedBefore(cutoffMs: number, limit: number): Promise<DeliveryDoc[]> {
    return this.store.find<DeliveryDoc>(
      DELIVERIES,
      { status: { $in: ['succeeded', 'failed'] }, created_ms: { $lt: cutoffMs } },
      { limit },
    );
  }

  async write(batch: WriteBatch): Promise<void> {
    for (const { collection, doc } of batch.upserts ?? []) if (collection === DELIVERIES) checkDelivery(doc);
    return this.store.writeBatch(batch);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
