/**
 * The deliveries' storage port: where the publisher records deliveries, the dispatcher reads the
 * due ones and records outcomes, and the API lists them. Implemented by a SQLite table of columns
 * (infrastructure/webhooks/sqliteDeliveries.ts, the embedded default) and by the deliveries kept
 * as documents in any ReadStore (infrastructure/webhooks/readStoreDeliveries.ts, the MongoDB
 * stack); both pass test/contract/deliveryStorageContract.ts.
 */
import type { Document, ReadStore, WriteBatch } from '../../core/readStore.ts';
import { DELIVERY_STATUSES, isDeliveryStatus, type Attempt, type DeliveryStatus } from './delivery.ts';

/** The deliveries' collection name in write batches (stored by the DeliveryStorage, not the ReadStore). */
export const DELIVERIES = 'wh_deliveries';

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
   * deliveries stored before bodies were kept apart); otherwise it is the payloads document of
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
 * `doc` as a delivery to store: throws, naming the field, when a field the queries use is missing
 * or of the wrong type (a storage then writes nothing of the batch).
 */
export const checkDelivery = (doc: Record<string, unknown>): DeliveryDoc => {
  const id = doc.id;
  if (typeof id !== 'string' || id === '') throw new Error('delivery: id must be a non-empty string');
  const fail = (field: string, what: string): never => {
    throw new Error(`delivery ${id}: ${field} must be ${what}`);
  };
  for (const field of ['endpoint_id', 'event_id', 'event_type', 'order_key', 'created_at'])
    if (typeof doc[field] !== 'string') fail(field, 'a string');
  for (const field of ['seq', 'created_ms']) if (!Number.isSafeInteger(doc[field])) fail(field, 'an integer');
  if (!isDeliveryStatus(doc.status)) fail('status', `one of ${DELIVERY_STATUSES.join(', ')}`);
  if (doc.next_attempt_at !== null && !Number.isSafeInteger(doc.next_attempt_at))
    fail('next_attempt_at', 'an integer or null');
  if (!Array.isArray(doc.attempts)) fail('attempts', 'an array');
  for (const field of ['payload', 'failure_reason'])
    if (doc[field] !== undefined && typeof doc[field] !== 'string') fail(field, 'a string when set');
  return doc as DeliveryDoc;
};

/** An endpoint and an order key (a voucher id): its deliveries go out one at a time, in `seq` order. */
export interface DeliveryKey {
  endpoint_id: string;
  order_key: string;
}

/** The name of an endpoint's key in `pendingKeys`' answer (endpoint ids hold no `/`). */
export const pendingKey = (endpointId: string, orderKey: string): string => `${endpointId}/${orderKey}`;

/** Which deliveries a list or count covers. */
export interface DeliveryFilter {
  endpoint_id?: string;
  status?: DeliveryStatus;
}

/**
 * Deliveries, with the other collections of the webhooks store (endpoint copies, health, event
 * bodies, checkpoints, leases) in `store`. `write` stores a batch in one transaction: its upserts
 * and deletes of DELIVERIES go to the deliveries, the others to `store`'s collections, the
 * checkpoint beside them, and its fence (process roles' leases) is checked in that transaction.
 */
export interface DeliveryStorage {
  /** The webhooks store's other collections (never read DELIVERIES through it). */
  readonly store: ReadStore;
  /** Declares what the queries need (tables, indexes); idempotent. */
  start(): Promise<void>;
  get(id: string): Promise<DeliveryDoc | null>;
  getMany(ids: readonly string[]): Promise<Map<string, DeliveryDoc>>;
  /**
   * Which of `keys` have a pending delivery (due, retrying or waiting), each named as
   * `pendingKey` names it: one lookup for a whole batch of keys.
   */
  pendingKeys(keys: readonly DeliveryKey[]): Promise<Set<string>>;
  /** The earliest (by `seq`) delivery of the endpoint and key that waits behind another one. */
  firstWaiting(endpointId: string, orderKey: string): Promise<DeliveryDoc | null>;
  /** Pending deliveries due at `now`, earliest first. */
  due(now: number, limit: number): Promise<DeliveryDoc[]>;
  /** When the next pending delivery falls due after `after` (ms), or null. */
  nextDueAt(after: number): Promise<number | null>;
  /** Newest first (`created_ms`, then `seq`, descending). */
  list(filter: DeliveryFilter, page: { skip: number; limit: number }): Promise<DeliveryDoc[]>;
  count(filter: DeliveryFilter): Promise<number>;
  /** The endpoint's failed deliveries created at or after `sinceMs`, by `seq`. */
  failedSince(endpointId: string, sinceMs: number, limit: number): Promise<DeliveryDoc[]>;
  /** Deliveries that ended (succeeded or failed) and were created before `cutoffMs`. */
  endedBefore(cutoffMs: number, limit: number): Promise<DeliveryDoc[]>;
  write(batch: WriteBatch): Promise<void>;
  close(): Promise<void>;
}
