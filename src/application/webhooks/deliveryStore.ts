import type { Document, Filter, ReadStore, WriteBatch } from '../../core/readStore.ts';
import type { Attempt, DeliveryStatus } from '../../domain/webhooks/delivery.ts';
import type { Endpoint } from '../../domain/webhooks/endpoint.ts';

/** Collections of an environment's webhooks store (DATA_DIR/<environment>/webhooks.db on the embedded default). */
export const DELIVERIES = 'wh_deliveries';
/** The publisher's copy of each endpoint at its checkpoint (secrets included: this store is the service's own). */
export const ENDPOINTS = 'wh_endpoints';
/** Per endpoint: since when every attempt has failed (the 5-day auto-disable). */
export const HEALTH = 'wh_health';
/** The body of each event, stored once for all of the event's deliveries (keyed by the event id). */
export const PAYLOADS = 'wh_payloads';
export const PUBLISHER_CHECKPOINT = 'webhook_publisher.v1';

export interface DeliveryDoc extends Document {
  /** `msg_…`, derived from the event and the endpoint. */
  id: string;
  endpoint_id: string;
  /** `evt_…`: the `webhook-id` of every attempt. */
  event_id: string;
  event_type: string;
  /** Deliveries with the same endpoint and key go out one at a time, in `seq` order (the voucher id). */
  order_key: string;
  /** The event's global position (0 for test events). */
  seq: number;
  /**
   * The exact body every attempt sends, when the delivery holds it itself (test events, and
   * deliveries stored before bodies were kept apart); otherwise it is the PAYLOADS document of
   * `event_id`.
   */
  payload?: string;
  status: DeliveryStatus;
  /** Ms since epoch when due; null while it waits behind an earlier delivery of its key, or once final. */
  next_attempt_at: number | null;
  attempts: Attempt[];
  created_at: string;
  created_ms: number;
  /** Why it failed without an attempt (endpoint deleted or disabled). */
  failure_reason?: string;
}

/**
 * The changes the API makes to deliveries, made where the dispatcher runs (it is woken after
 * each): on the main thread (`localDeliveryControl` in deliveries.ts), or on the webhook thread by messages.
 * Times are the caller's clock's (ms).
 */
export interface DeliveryControl {
  /** The delivery made pending and due at `now`; null when the endpoint has no such delivery. */
  resend(endpointId: string, deliveryId: string, now: number): Promise<DeliveryDoc | null>;
  /** Failed deliveries of the endpoint created at or after `sinceMs` made pending again; how many. */
  recover(endpointId: string, sinceMs: number, now: number): Promise<number>;
  /** A new delivery (a test event). */
  add(doc: DeliveryDoc): Promise<void>;
  /** Deliveries that ended and were created before `cutoffMs` removed; how many. */
  purge(cutoffMs: number): Promise<number>;
}

export type EndpointDoc = Endpoint & Document;

/** An event's body, written with the event's deliveries; removed once none of them is left. */
export interface PayloadDoc extends Document {
  /** The event id (`evt_…`). */
  id: string;
  payload: string;
  /** The ids of the deliveries that send it. */
  deliveries: string[];
}

export interface HealthDoc extends Document {
  failing_since: number | null;
}

/**
 * The deliveries, kept in a ReadStore (any implementation of the port: the embedded SQLite one by
 * default). Every change that decides whether a delivery of a key waits or goes (the publisher's
 * batch, the end of an attempt, resend, recover) runs through `exclusive`, one at a time, so a
 * delivery never waits behind one that has just finished.
 */
export class DeliveryStore {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly store: ReadStore) {}

  async start(): Promise<void> {
    await this.store.ensureIndex(DELIVERIES, ['status', 'next_attempt_at']);
    await this.store.ensureIndex(DELIVERIES, ['endpoint_id', 'order_key', 'status', 'seq']);
    await this.store.ensureIndex(DELIVERIES, ['endpoint_id', 'created_ms']);
    await this.store.ensureIndex(DELIVERIES, ['endpoint_id', 'status', 'created_ms']);
    await this.store.ensureIndex(DELIVERIES, ['status', 'created_ms']);
  }

  /** Runs `fn` after every earlier exclusive call has finished. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  get(id: string): Promise<DeliveryDoc | null> {
    return this.store.get<DeliveryDoc>(DELIVERIES, id);
  }

  endpoint(id: string): Promise<EndpointDoc | null> {
    return this.store.get<EndpointDoc>(ENDPOINTS, id);
  }

  /** The bodies of the given deliveries, by delivery id: their own, or their event's. */
  async payloads(deliveries: readonly DeliveryDoc[]): Promise<Map<string, string>> {
    const bodies = new Map<string, string>();
    const wanted: string[] = [];
    for (const d of deliveries)
      if (d.payload !== undefined) bodies.set(d.id, d.payload);
      else wanted.push(d.event_id);
    if (wanted.length === 0) return bodies;
    const found = await this.store.getMany<PayloadDoc>(PAYLOADS, wanted);
    for (const d of deliveries) {
      const doc = d.payload === undefined ? found.get(d.event_id) : undefined;
      if (doc) bodies.set(d.id, doc.payload);
    }
    return bodies;
  }

  /**
   * The events whose bodies no delivery needs once `removing` (deliveries about to be deleted)
   * are gone: every delivery their body names is among them or no longer stored.
   */
  async unreferencedPayloads(removing: readonly DeliveryDoc[]): Promise<string[]> {
    const gone = new Set(removing.map((d) => d.id));
    const events = [...new Set(removing.filter((d) => d.payload === undefined).map((d) => d.event_id))];
    if (events.length === 0) return [];
    const bodies = await this.store.getMany<PayloadDoc>(PAYLOADS, events);
    const others = [...bodies.values()].flatMap((b) => b.deliveries.filter((id) => !gone.has(id)));
    const kept = others.length > 0 ? await this.store.getMany<DeliveryDoc>(DELIVERIES, others) : new Map();
    return [...bodies.values()].filter((b) => !b.deliveries.some((id) => kept.has(id))).map((b) => b.id);
  }

  /** Is a delivery of this endpoint and key pending (due, retrying or waiting)? */
  async hasPending(endpointId: string, orderKey: string): Promise<boolean> {
    const found = await this.store.find<DeliveryDoc>(
      DELIVERIES,
      { endpoint_id: endpointId, order_key: orderKey, status: 'pending' },
      // in the index's order: the first match ends the search (ordered by id, every match of the key is read and sorted)
      { sort: [['seq', 1]], limit: 1 },
    );
    return found.length > 0;
  }

  /** The stored deliveries among `ids`, by id. */
  getMany(ids: string[]): Promise<Map<string, DeliveryDoc>> {
    return this.store.getMany<DeliveryDoc>(DELIVERIES, ids);
  }

  /**
   * For each endpoint and key of `ended` (deliveries that have just ended), the earliest waiting
   * delivery, made due at `now`: one per key, however many of the key ended.
   */
  async releaseNext(
    ended: ReadonlyArray<Pick<DeliveryDoc, 'endpoint_id' | 'order_key'>>,
    now: number,
  ): Promise<DeliveryDoc[]> {
    const released: DeliveryDoc[] = [];
    const keys = new Set<string>();
    for (const { endpoint_id: endpointId, order_key: orderKey } of ended) {
      const key = `${endpointId}/${orderKey}`;
      if (keys.has(key)) continue;
      keys.add(key);
      const [next] = await this.store.find<DeliveryDoc>(
        DELIVERIES,
        { endpoint_id: endpointId, order_key: orderKey, status: 'pending', next_attempt_at: null },
        { sort: [['seq', 1]], limit: 1 },
      );
      if (next) released.push({ ...next, next_attempt_at: now });
    }
    return released;
  }

  due(now: number, limit: number): Promise<DeliveryDoc[]> {
    return this.store.find<DeliveryDoc>(
      DELIVERIES,
      { status: 'pending', next_attempt_at: { $lte: now } },
      { sort: [['next_attempt_at', 1]], limit },
    );
  }

  /** When the next pending delivery falls due (ms), or null. */
  async nextDueAt(after: number): Promise<number | null> {
    const [next] = await this.store.find<DeliveryDoc>(
      DELIVERIES,
      { status: 'pending', next_attempt_at: { $gt: after } },
      { sort: [['next_attempt_at', 1]], limit: 1 },
    );
    return next?.next_attempt_at ?? null;
  }

  find(filter: Filter, options: { skip: number; limit: number }): Promise<DeliveryDoc[]> {
    return this.store.find<DeliveryDoc>(DELIVERIES, filter, {
      sort: [
        ['created_ms', -1],
        ['seq', -1],
      ],
      ...options,
    });
  }

  count(filter: Filter): Promise<number> {
    return this.store.count(DELIVERIES, filter);
  }

  health(endpointId: string): Promise<HealthDoc | null> {
    return this.store.get<HealthDoc>(HEALTH, endpointId);
  }

  write(batch: WriteBatch): Promise<void> {
    return this.store.writeBatch(batch);
  }
}
