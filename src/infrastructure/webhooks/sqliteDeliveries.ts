/**
 * The embedded default's delivery storage: a table `wh_delivery` of columns in webhooks.db, beside
 * the SqliteReadStore's collections (endpoint copies, health, event bodies, checkpoints, leases)
 * and written in the same transactions. Only the attempts are JSON. The indexes the dispatcher
 * and publisher use cover pending deliveries only (partial indexes: small, and an ended delivery
 * leaves them); the listing's index is ordered by creation time, so inserts land on its last pages.
 *
 * Deliveries stored as documents by earlier builds (the ReadStore collection `wh_deliveries`) are
 * moved into the table when a connection opens the file, in one transaction, and that collection
 * is dropped: every connection finds them in the table from then on. A delivery found in both (the
 * file went back to an earlier build and forward again) takes the documents' version, the later.
 */
import type Database from 'better-sqlite3';
import type { WriteBatch } from '../../core/readStore.ts';
import { isDeliveryStatus, type Attempt, type DeliveryStatus } from '../../domain/webhooks/delivery.ts';
import {
  checkDelivery,
  DELIVERIES,
  pendingKey,
  type DeliveryDoc,
  type DeliveryFilter,
  type DeliveryKey,
  type DeliveryStorage,
} from '../../domain/webhooks/deliveryStorage.ts';
import type { SqliteReadStore } from '../readStore/sqliteReadStore.ts';

const COLUMNS = [
  'id',
  'endpoint_id',
  'event_id',
  'event_type',
  'order_key',
  'seq',
  'status',
  'next_attempt_at',
  'attempts',
  'created_at',
  'created_ms',
  'failure_reason',
  'payload',
] as const;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS wh_delivery (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  order_key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  status TEXT NOT NULL,
  next_attempt_at INTEGER,
  attempts TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  failure_reason TEXT,
  payload TEXT
);
CREATE INDEX IF NOT EXISTS wh_delivery_pending_key ON wh_delivery (endpoint_id, order_key, seq) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS wh_delivery_pending_due ON wh_delivery (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS wh_delivery_failed ON wh_delivery (endpoint_id, created_ms, seq) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS wh_delivery_listed ON wh_delivery (endpoint_id, created_ms, seq);
CREATE INDEX IF NOT EXISTS wh_delivery_created ON wh_delivery (created_ms);
`;

/**
 * Which of a JSON array of [endpoint id, order key] pairs have a pending delivery: the pairs'
 * indexes in the array, each found by a search of the pending deliveries' index on both columns.
 */
export const PENDING_KEYS = `SELECT k.key FROM json_each(?) AS k WHERE EXISTS (
  SELECT 1 FROM wh_delivery INDEXED BY wh_delivery_pending_key
  WHERE status = 'pending' AND endpoint_id = json_extract(k.value, '$[0]') AND order_key = json_extract(k.value, '$[1]'))`;

/** The ReadStore table of deliveries stored as JSON documents (SqliteReadStore's `rm_<collection>`). */
const OLD_TABLE = `rm_${DELIVERIES}`;

interface Row {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  order_key: string;
  seq: number;
  status: string;
  next_attempt_at: number | null;
  attempts: string;
  created_at: string;
  created_ms: number;
  failure_reason: string | null;
  payload: string | null;
}

const toDoc = (row: Row): DeliveryDoc => ({
  id: row.id,
  endpoint_id: row.endpoint_id,
  event_id: row.event_id,
  event_type: row.event_type,
  order_key: row.order_key,
  seq: row.seq,
  ...(row.payload !== null ? { payload: row.payload } : {}),
  status: row.status as DeliveryStatus,
  next_attempt_at: row.next_attempt_at,
  attempts: JSON.parse(row.attempts) as Attempt[],
  created_at: row.created_at,
  created_ms: row.created_ms,
  ...(row.failure_reason !== null ? { failure_reason: row.failure_reason } : {}),
});

/** A delivery document as the table's row (checked: a bad document fails its whole batch). */
const toRow = (doc: Record<string, unknown>): Row => {
  const d = checkDelivery(doc);
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    order_key: d.order_key,
    seq: d.seq,
    status: d.status,
    next_attempt_at: d.next_attempt_at,
    attempts: JSON.stringify(d.attempts),
    created_at: d.created_at,
    created_ms: d.created_ms,
    failure_reason: d.failure_reason ?? null,
    payload: d.payload ?? null,
  };
};

const nonNegative = (value: number, what: string): number => {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${what} must be a non-negative integer`);
  return value;
};

export class SqliteDeliveries implements DeliveryStorage {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(readonly store: SqliteReadStore) {
    this.db = store.database;
    this.db.exec(SCHEMA);
    this.migrate();
  }

  async start(): Promise<void> {}

  /** Moves deliveries stored as ReadStore documents into the table (once: the old table is dropped). */
  private migrate(): void {
    this.db
      .transaction(() => {
        const old = this.db
          .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
          .get(OLD_TABLE) as unknown;
        if (old === undefined) return;
        // in SQL, a row at a time without holding the old documents in memory (the JSON paths are the documents' fields)
        const field = (column: string) =>
          column === 'attempts'
            ? `coalesce(json_extract(doc, '$.attempts'), '[]')`
            : `json_extract(doc, '$.${column}')`;
        this.db.exec(
          `INSERT OR REPLACE INTO wh_delivery (${COLUMNS.join(', ')}) SELECT ${COLUMNS.map(field).join(', ')} FROM ${OLD_TABLE}`,
        );
        this.db.exec(`DROP TABLE ${OLD_TABLE}`);
      })
      .immediate();
  }

  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private rows(sql: string, ...params: unknown[]): DeliveryDoc[] {
    return (this.stmt(sql).all(...params) as Row[]).map(toDoc);
  }

  async get(id: string): Promise<DeliveryDoc | null> {
    const row = this.stmt('SELECT * FROM wh_delivery WHERE id = ?').get(id) as Row | undefined;
    return row ? toDoc(row) : null;
  }

  async getMany(ids: readonly string[]): Promise<Map<string, DeliveryDoc>> {
    const found = new Map<string, DeliveryDoc>();
    const unique = [...new Set(ids)];
    // one statement for any number of ids: the ids as a JSON array, unpacked by json_each
    if (unique.length > 0)
      for (const doc of this.rows(
        'SELECT * FROM wh_delivery WHERE id IN (SELECT value FROM json_each(?))',
        JSON.stringify(unique),
      ))
        found.set(doc.id, doc);
    return found;
  }

  async pendingKeys(keys: readonly DeliveryKey[]): Promise<Set<string>> {
    const found = new Set<string>();
    if (keys.length === 0) return found;
    const pairs = keys.map((k) => [k.endpoint_id, k.order_key]);
    const hits = this.stmt(PENDING_KEYS).pluck().all(JSON.stringify(pairs)) as number[];
    for (const i of hits) found.add(pendingKey(keys[i]!.endpoint_id, keys[i]!.order_key));
    return found;
  }

  async firstWaiting(endpointId: string, orderKey: string): Promise<DeliveryDoc | null> {
    const row = this.stmt(
      "SELECT * FROM wh_delivery WHERE status = 'pending' AND endpoint_id = ? AND order_key = ? AND next_attempt_at IS NULL ORDER BY seq LIMIT 1",
    ).get(endpointId, orderKey) as Row | undefined;
    return row ? toDoc(row) : null;
  }

  async due(now: number, limit: number): Promise<DeliveryDoc[]> {
    return this.rows(
      "SELECT * FROM wh_delivery WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
      now,
      nonNegative(limit, 'limit'),
    );
  }

  async nextDueAt(after: number): Promise<number | null> {
    const at = this.stmt(
      "SELECT next_attempt_at FROM wh_delivery WHERE status = 'pending' AND next_attempt_at > ? ORDER BY next_attempt_at LIMIT 1",
    )
      .pluck()
      .get(after) as number | undefined;
    return at ?? null;
  }

  async list(filter: DeliveryFilter, page: { skip: number; limit: number }): Promise<DeliveryDoc[]> {
    const { where, params } = whereOf(filter);
    return this.rows(
      `SELECT * FROM wh_delivery${byStatus(filter)} WHERE ${where} ORDER BY created_ms DESC, seq DESC LIMIT ? OFFSET ?`,
      ...params,
      nonNegative(page.limit, 'limit'),
      nonNegative(page.skip, 'skip'),
    );
  }

  async count(filter: DeliveryFilter): Promise<number> {
    const { where, params } = whereOf(filter);
    return this.stmt(`SELECT COUNT(*) FROM wh_delivery WHERE ${where}`)
      .pluck()
      .get(...params) as number;
  }

  async failedSince(endpointId: string, sinceMs: number, limit: number): Promise<DeliveryDoc[]> {
    return this.rows(
      "SELECT * FROM wh_delivery INDEXED BY wh_delivery_failed WHERE status = 'failed' AND endpoint_id = ? AND created_ms >= ? ORDER BY seq LIMIT ?",
      endpointId,
      sinceMs,
      nonNegative(limit, 'limit'),
    );
  }

  async endedBefore(cutoffMs: number, limit: number): Promise<DeliveryDoc[]> {
    return this.rows(
      "SELECT * FROM wh_delivery WHERE created_ms < ? AND status <> 'pending' ORDER BY created_ms LIMIT ?",
      cutoffMs,
      nonNegative(limit, 'limit'),
    );
  }

  async write(batch: WriteBatch): Promise<void> {
    const upserts = batch.upserts?.filter((u) => u.collection === DELIVERIES) ?? [];
    const deletes = batch.deletes?.filter((d) => d.collection === DELIVERIES) ?? [];
    if (upserts.length === 0 && deletes.length === 0) {
      this.store.writeBatchWith(batch);
      return;
    }
    const rows = upserts.map(({ doc }) => toRow(doc));
    const rest: WriteBatch = {
      ...batch,
      upserts: batch.upserts?.filter((u) => u.collection !== DELIVERIES),
      deletes: batch.deletes?.filter((d) => d.collection !== DELIVERIES),
    };
    const upsert = this.stmt(
      `INSERT INTO wh_delivery (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_attempt_at = excluded.next_attempt_at,
         attempts = excluded.attempts, failure_reason = excluded.failure_reason, payload = excluded.payload`,
    );
    const remove = this.stmt('DELETE FROM wh_delivery WHERE id = ?');
    this.store.writeBatchWith(rest, () => {
      for (const row of rows) upsert.run(row);
      for (const { id } of deletes) remove.run(id);
    });
  }

  async close(): Promise<void> {
    this.statements.clear();
    await this.store.close();
  }
}

/**
 * Failed deliveries are read on their partial index: without statistics SQLite would take the
 * listing's index and read every delivery of the endpoint to find the few that failed.
 */
const byStatus = (filter: DeliveryFilter): string =>
  filter.status === 'failed' ? ' INDEXED BY wh_delivery_failed' : '';

const whereOf = (filter: DeliveryFilter): { where: string; params: string[] } => {
  const terms: string[] = [];
  const params: string[] = [];
  if (filter.status !== undefined) {
    // a literal status lets SQLite use the partial index of that status
    if (!isDeliveryStatus(filter.status)) throw new Error('status must be pending, succeeded or failed');
    terms.push(`status = '${filter.status}'`);
  }
  if (filter.endpoint_id !== undefined) {
    terms.push('endpoint_id = ?');
    params.push(filter.endpoint_id);
  }
  return { where: terms.length > 0 ? terms.join(' AND ') : '1', params };
};
