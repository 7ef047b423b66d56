import type { Document, ReadStore, WriteBatch } from '../../core/readStore.ts';
import {
  DELIVERIES,
  pendingKey,
  type DeliveryDoc,
  type DeliveryFilter,
  type DeliveryKey,
  type DeliveryStorage,
} from '../../domain/webhooks/deliveryStorage.ts';
import type { Endpoint } from '../../domain/webhooks/endpoint.ts';

export { DELIVERIES, pendingKey, type DeliveryDoc, type DeliveryFilter, type DeliveryKey, type DeliveryStorage };

// Collections of an environment's webhooks store (DATA_DIR/<environment>/webhooks.db on the embedded default), beside DELIVERIES.
/** The publisher's copy of each endpoint at its checkpoint (secrets included: this store is the service's own). */
export const ENDPOINTS = 'wh_endpoints';
/** Per endpoint: since when every attempt has failed (the 5-day auto-disable). */
export const HEALTH = 'wh_health';
/** The body of each event, stored once for all of the event's deliveries (keyed by the event id). */
export const PAYLOADS = 'wh_payloads';
export const PUBLISHER_CHECKPOINT = 'webhook_publisher.v1';

/** Endpoint copies kept in memory at most (an environment has at most 16 endpoints; other ids are deleted ones). */
const MAX_CACHED_ENDPOINTS = 1_000;

/** The ids of the endpoint copies a batch writes or deletes. */
const endpointIdsIn = (batch: WriteBatch): string[] => [
  ...(batch.upserts ?? []).filter((u) => u.collection === ENDPOINTS).map((u) => u.doc.id),
  ...(batch.deletes ?? []).filter((d) => d.collection === ENDPOINTS).map((d) => d.id),
];

/** A write's fence (process roles: the lease the writer holds), taken at each write. */
export type FenceOf = () => NonNullable<WriteBatch['fence']>;

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
 * The deliveries, kept in a DeliveryStorage (a SQLite table on the embedded default, documents of
 * a ReadStore on MongoDB), with the webhooks store's other collections in `store`. Every change
 * that decides whether a delivery of a key waits or goes (the publisher's batch, the end of an
 * attempt, resend, recover) runs through `exclusive`, one at a time, so a delivery never waits
 * behind one that has just finished. With `fence` (a process role's lease), every write is
 * refused once the lease is another process's.
 */
export class DeliveryStore {
  private tail: Promise<unknown> = Promise.resolve();
  /** Keys (pendingKey) of deliveries attempted before they are stored (decision 083): pending, though not in the storage yet. */
  private readonly held: Set<string>;
  /** The endpoint copies read so far, by id (null: none stored), while `cacheEndpoints` holds. */
  private endpoints: Map<string, EndpointDoc | null> | undefined;
  /** Moves at the start and the end of each write of endpoint copies: a read that overlapped one is not kept. */
  private endpointWrites = 0;

  constructor(
    readonly storage: DeliveryStorage,
    private readonly fence?: FenceOf,
    held?: Set<string>,
  ) {
    this.held = held ?? new Set();
  }

  /**
   * Keeps the endpoint copies in memory once read, dropping one whenever this store writes it:
   * for a store whose endpoint copies only its own publisher writes (the publisher runs in the
   * dispatcher's thread), so that an attempt does not read and parse its endpoint's copy again.
   */
  cacheEndpoints(): this {
    this.endpoints ??= new Map();
    return this;
  }

  /** The webhooks store's other collections (endpoint copies, health, bodies, checkpoints, leases). */
  get store(): ReadStore {
    return this.storage.store;
  }

  /** The same storage, every write fenced by `fence`. */
  fenced(fence: FenceOf): DeliveryStore {
    return new DeliveryStore(this.storage, fence, this.held);
  }

  start(): Promise<void> {
    return this.storage.start();
  }

  /** Runs `fn` after every earlier exclusive call has finished. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  get(id: string): Promise<DeliveryDoc | null> {
    return this.storage.get(id);
  }

  async endpoint(id: string): Promise<EndpointDoc | null> {
    const cache = this.endpoints;
    if (!cache) return this.store.get<EndpointDoc>(ENDPOINTS, id);
    const cached = cache.get(id);
    if (cached !== undefined) return cached;
    const writes = this.endpointWrites;
    const doc = await this.store.get<EndpointDoc>(ENDPOINTS, id);
    if (writes === this.endpointWrites) {
      if (cache.size >= MAX_CACHED_ENDPOINTS) cache.clear();
      cache.set(id, doc);
    }
    return doc;
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
    const kept = others.length > 0 ? await this.storage.getMany(others) : new Map<string, DeliveryDoc>();
    return [...bodies.values()].filter((b) => !b.deliveries.some((id) => kept.has(id))).map((b) => b.id);
  }

  /**
   * Which of `keys` have a pending delivery (due, retrying or waiting), named by `pendingKey`: in
   * the storage, or attempted and not stored yet (`hold`).
   */
  async pendingKeys(keys: readonly DeliveryKey[]): Promise<Set<string>> {
    const found = await this.storage.pendingKeys(keys);
    if (this.held.size > 0)
      for (const k of keys) {
        const key = pendingKey(k.endpoint_id, k.order_key);
        if (this.held.has(key)) found.add(key);
      }
    return found;
  }

  /** The keys of deliveries attempted before they are stored count as pending until `release`. */
  hold(keys: readonly DeliveryKey[]): void {
    for (const k of keys) this.held.add(pendingKey(k.endpoint_id, k.order_key));
  }

  release(keys: readonly DeliveryKey[]): void {
    for (const k of keys) this.held.delete(pendingKey(k.endpoint_id, k.order_key));
  }

  /** The stored deliveries among `ids`, by id. */
  getMany(ids: string[]): Promise<Map<string, DeliveryDoc>> {
    return this.storage.getMany(ids);
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
      const key = pendingKey(endpointId, orderKey);
      if (keys.has(key)) continue;
      keys.add(key);
      const next = await this.storage.firstWaiting(endpointId, orderKey);
      if (next) released.push({ ...next, next_attempt_at: now });
    }
    return released;
  }

  due(now: number, limit: number): Promise<DeliveryDoc[]> {
    return this.storage.due(now, limit);
  }

  /** When the next pending delivery falls due (ms), or null. */
  nextDueAt(after: number): Promise<number | null> {
    return this.storage.nextDueAt(after);
  }

  /** Newest first. */
  find(filter: DeliveryFilter, options: { skip: number; limit: number }): Promise<DeliveryDoc[]> {
    return this.storage.list(filter, options);
  }

  count(filter: DeliveryFilter): Promise<number> {
    return this.storage.count(filter);
  }

  /** The endpoint's failed deliveries created at or after `sinceMs`, by `seq`. */
  failedSince(endpointId: string, sinceMs: number, limit: number): Promise<DeliveryDoc[]> {
    return this.storage.failedSince(endpointId, sinceMs, limit);
  }

  /** Deliveries that ended and were created before `cutoffMs`. */
  endedBefore(cutoffMs: number, limit: number): Promise<DeliveryDoc[]> {
    return this.storage.endedBefore(cutoffMs, limit);
  }

  health(endpointId: string): Promise<HealthDoc | null> {
    return this.store.get<HealthDoc>(HEALTH, endpointId);
  }

  /** Writes the batch in one transaction: DELIVERIES to the deliveries, the rest to their collections; fenced when this store is. */
  async write(batch: WriteBatch): Promise<void> {
    const fenced = this.fence ? { ...batch, fence: this.fence() } : batch;
    const changed = this.endpoints ? endpointIdsIn(batch) : [];
    if (changed.length === 0) return this.storage.write(fenced);
    // the cached copies are dropped before and after the write, and a read that overlapped it is not kept
    this.forgetEndpoints(changed);
    try {
      await this.storage.write(fenced);
    } finally {
      this.forgetEndpoints(changed);
    }
  }

  private forgetEndpoints(ids: readonly string[]): void {
    this.endpointWrites += 1;
    for (const id of ids) this.endpoints!.delete(id);
  }

  close(): Promise<void> {
    return this.storage.close();
  }
}
