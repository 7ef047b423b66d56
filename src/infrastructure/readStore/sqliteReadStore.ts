/**
 * Embedded ReadStore on SQLite (better-sqlite3): one table `rm_<collection>` per collection
 * (`id TEXT PRIMARY KEY, doc TEXT NOT NULL` holding the JSON document), created lazily, and a
 * `checkpoints` table written in the same transaction as the documents. Filters, sorts and
 * indexes are compiled by sqlFilter.ts.
 *
 * Beyond the port: documents are stored as JSON (Dates become ISO strings, undefined fields
 * are dropped); find without a sort but with skip/limit orders by id; `limit: 0` returns nothing.
 */
import type Database from 'better-sqlite3';
import { closeWal, openWithWal } from '../sqliteWal.ts';
import {
  FencedWriteError,
  type Document,
  type Filter,
  type FindOptions,
  type ReadStore,
  type WriteBatch,
} from '../../core/readStore.ts';
import { compileFilter, compileSort, indexDdl, tableName, type SqlParam } from './sqlFilter.ts';

/** getMany asks for ids in chunks padded to a power of two, so few distinct statements get cached. */
const MAX_IDS_PER_QUERY = 512;
const STATEMENT_CACHE_SIZE = 500;
/** Page cache during a rebuild's bulk writes: 64 MB (negative: KiB, as SQLite reads it). */
const BULK_CACHE_SIZE = -65_536;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function assertId(id: unknown, what: string): asserts id is string {
  if (typeof id !== 'string' || id === '')
    throw new Error(`${what}: id must be a non-empty string, got ${JSON.stringify(id)}`);
}

function assertIdType(id: unknown, what: string): asserts id is string {
  if (typeof id !== 'string') throw new Error(`${what}: id must be a string, got ${JSON.stringify(id)}`);
}

function nonNegativeInteger(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${what} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

export class SqliteReadStore implements ReadStore {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly upserts = new Map<string, Database.Statement>();
  private readonly tables = new Set<string>();
  private readonly applyBatch: Database.Transaction<(batch: WriteBatch, extra?: () => void) => void>;
  private readonly clear: Database.Transaction<(tables: string[], checkpointName: string) => void>;

  private constructor(private readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)');
    this.applyBatch = db.transaction((batch: WriteBatch, extra?: () => void) => {
      if (batch.fence) this.checkFence(batch.fence);
      extra?.();
      for (const { collection, doc } of batch.upserts ?? []) {
        if (!isPlainObject(doc)) throw new Error(`upsert into ${collection}: document must be a plain object`);
        assertId(doc.id, `upsert into ${collection}`);
        this.upsert(collection).run(doc.id, JSON.stringify(doc));
      }
      for (const { collection, id } of batch.deletes ?? []) {
        assertId(id, `delete from ${collection}`);
        this.stmt(`DELETE FROM ${tableName(collection)} WHERE id = ?`).run(id);
      }
      if (batch.checkpoint !== undefined) {
        const { name, position } = batch.checkpoint;
        assertId(name, 'checkpoint');
        this.setCheckpoint(name, nonNegativeInteger(position, `checkpoint ${name} position`));
      }
    });
    this.clear = db.transaction((tables: string[], checkpointName: string) => {
      for (const table of tables) this.stmt(`DELETE FROM ${table}`).run();
      this.stmt('DELETE FROM checkpoints WHERE name = ?').run(checkpointName);
    });
  }

  /**
   * `walAutocheckpoint`: the connection's `wal_autocheckpoint` instead of sqliteWal.ts's, for a
   * connection on a worker thread whose checkpoints must not stall that thread (0: the main
   * thread's connection to the same file has the checkpointer copy it).
   */
  static open(filePath: string, options: { walAutocheckpoint?: number } = {}): SqliteReadStore {
    // NORMAL (no fsync per commit in WAL mode) may lose the last commits on power loss but
    // never corrupts the file. Acceptable because read models are derived data: documents and
    // checkpoint commit together, so the projector just replays the event log from the
    // checkpoint that survived (and a read model can always be rebuilt from scratch).
    return openWithWal(filePath, 'NORMAL', 5_000, (db) => {
      if (options.walAutocheckpoint !== undefined) db.pragma(`wal_autocheckpoint = ${options.walAutocheckpoint}`);
      return new SqliteReadStore(db);
    });
  }

  /** The upsert statement of a collection (looked up by the collection's name, not by its SQL text). */
  private upsert(collection: string): Database.Statement {
    let statement = this.upserts.get(collection);
    if (!statement) {
      statement = this.db.prepare(
        `INSERT INTO ${tableName(collection)} (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`,
      );
      this.upserts.set(collection, statement);
    }
    return statement;
  }

  async get<T extends Document = Document>(collection: string, id: string): Promise<T | null> {
    assertIdType(id, `get from ${collection}`);
    const doc = this.stmt(`SELECT doc FROM ${this.table(collection)} WHERE id = ?`).get(id) as string | undefined;
    return doc === undefined ? null : (JSON.parse(doc) as T);
  }

  async getMany<T extends Document = Document>(collection: string, ids: string[]): Promise<Map<string, T>> {
    const table = this.table(collection);
    const unique = [...new Set(ids)];
    unique.forEach((id) => assertIdType(id, `getMany from ${collection}`));
    const found = new Map<string, T>();
    if (unique.length === 1) {
      // one id (a single voucher's usage): the plain lookup, no IN list to build
      const json = this.stmt(`SELECT doc FROM ${table} WHERE id = ?`).get(unique[0]) as string | undefined;
      if (json !== undefined) found.set(unique[0]!, JSON.parse(json) as T);
      return found;
    }
    for (let start = 0; start < unique.length; start += MAX_IDS_PER_QUERY) {
      const chunk = unique.slice(start, start + MAX_IDS_PER_QUERY);
      let size = 1;
      while (size < chunk.length) size *= 2;
      const params = [...chunk, ...Array<string>(size - chunk.length).fill(chunk[0])];
      const sql = `SELECT doc FROM ${table} WHERE id IN (${params.map(() => '?').join(', ')})`;
      for (const json of this.stmt(sql).all(...params) as string[]) {
        const doc = JSON.parse(json) as T;
        found.set(doc.id, doc);
      }
    }
    return found;
  }

  async find<T extends Document = Document>(
    collection: string,
    filter: Filter = {},
    options: FindOptions = {},
  ): Promise<T[]> {
    const { sql, params } = this.findSql(collection, filter, options);
    return (this.stmt(sql).all(...params) as string[]).map((json) => JSON.parse(json) as T);
  }

  async count(collection: string, filter: Filter = {}): Promise<number> {
    const { where, params } = compileFilter(filter);
    return this.stmt(`SELECT COUNT(*) FROM ${this.table(collection)} WHERE ${where}`).get(...params) as number;
  }

  async writeBatch(batch: WriteBatch): Promise<void> {
    this.writeBatchWith(batch);
  }

  /**
   * The connection, for an adapter that keeps tables of its own in this file (the webhooks'
   * deliveries, sqliteDeliveries.ts) and writes them in this store's transactions.
   */
  get database(): Database.Database {
    return this.db;
  }

  /** writeBatch, synchronously, with `extra` run in the same transaction after the fence's check. */
  writeBatchWith(batch: WriteBatch, extra?: () => void): void {
    // Create tables before the transaction: a rollback would undo a CREATE TABLE that
    // `this.tables` already remembers.
    const collections = new Set<string>();
    for (const { collection } of batch.upserts ?? []) collections.add(collection);
    for (const { collection } of batch.deletes ?? []) collections.add(collection);
    for (const collection of collections) this.table(collection);
    if (batch.fence) this.table(batch.fence.collection);
    this.applyBatch.immediate(batch, extra);
  }

  /** Throws FencedWriteError unless the fence's document holds its value (inside the batch's transaction). */
  private checkFence({ collection, id, field, value }: NonNullable<WriteBatch['fence']>): void {
    const row = this.stmt(`SELECT doc FROM ${this.table(collection)} WHERE id = ?`).get(id) as string | undefined;
    const held = row ? ((JSON.parse(row) as Record<string, unknown>)[field] ?? null) : null;
    if (value === null ? row !== undefined : held !== value) throw new FencedWriteError(collection, id);
  }

  async getCheckpoint(name: string): Promise<number> {
    assertId(name, 'checkpoint');
    const position = this.stmt('SELECT position FROM checkpoints WHERE name = ?').get(name) as number | undefined;
    return position ?? 0;
  }

  async ensureIndex(collection: string, fields: string[]): Promise<void> {
    const ddl = indexDdl(collection, fields);
    this.table(collection);
    if (ddl !== null) this.db.exec(ddl);
  }

  async reset(collections: string[], checkpointName: string): Promise<void> {
    assertId(checkpointName, 'checkpoint');
    this.clear.immediate(
      collections.map((c) => this.table(c)),
      checkpointName,
    );
  }

  /**
   * A rebuild's writes without an fsync per WAL checkpoint (`synchronous = OFF`), with a 64 MB
   * page cache, and without the declared indexes of the collections that are empty when it starts
   * (the ones the rebuild emptied): they are built again once the work is done (or has failed),
   * from sorted entries instead of one random insert per document. Afterwards `synchronous =
   * NORMAL` again and a checkpoint that copies the WAL into the database file and syncs it. A crash
   * of the process meanwhile loses nothing committed (and leaves those indexes to the projector,
   * which declares them when it starts); a power loss during the rebuild may leave the file
   * unusable, and a read model file can always be deleted and rebuilt from the event log.
   */
  async bulkWrites<T>(work: () => Promise<T>): Promise<T> {
    const cacheSize = this.db.pragma('cache_size', { simple: true }) as number;
    this.db.pragma('synchronous = OFF');
    this.db.pragma(`cache_size = ${BULK_CACHE_SIZE}`);
    const deferred = this.dropIndexesOfEmptyCollections();
    try {
      return await work();
    } finally {
      try {
        for (const { sql } of deferred) this.db.exec(sql.replace(/^CREATE INDEX /i, 'CREATE INDEX IF NOT EXISTS '));
      } finally {
        this.db.pragma('synchronous = NORMAL');
        this.db.pragma(`cache_size = ${cacheSize}`);
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      }
    }
  }

  /** Drops the declared indexes of the empty collections; returns their definitions. */
  private dropIndexesOfEmptyCollections(): Array<{ name: string; sql: string }> {
    const indexes = this.db
      .prepare(
        "SELECT name, tbl_name AS tableName, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name LIKE 'rm\\_%' ESCAPE '\\'",
      )
      .all() as Array<{ name: string; tableName: string; sql: string }>;
    const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
    const empty = new Set<string>();
    for (const table of new Set(indexes.map((index) => index.tableName)))
      if (this.db.prepare(`SELECT 1 FROM ${quote(table)} LIMIT 1`).get() === undefined) empty.add(table);
    const dropped = indexes.filter((index) => empty.has(index.tableName));
    this.db.transaction(() => {
      for (const { name } of dropped) this.db.exec(`DROP INDEX ${quote(name)}`);
    })();
    return dropped;
  }

  async close(): Promise<void> {
    this.statements.clear();
    this.upserts.clear();
    if (!this.db.open) return;
    this.db.pragma('optimize'); // refresh planner statistics where useful, as SQLite recommends on close
    closeWal(this.db);
  }

  /** SQLite's query plan for a find (one line per plan step); for tests and diagnostics. */
  explainFind(collection: string, filter: Filter = {}, options: FindOptions = {}): string[] {
    const { sql, params } = this.findSql(collection, filter, options);
    const rows = this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>;
    return rows.map((row) => row.detail);
  }

  private findSql(collection: string, filter: Filter, options: FindOptions): { sql: string; params: SqlParam[] } {
    const table = this.table(collection);
    const { where, params } = compileFilter(filter);
    const paged = options.limit !== undefined || options.skip !== undefined;
    let sql = `SELECT doc FROM ${table} WHERE ${where}`;
    // Without a sort the order is unspecified (as in MongoDB) so SQLite may pick any index;
    // a page still needs a total order, hence `id` when skip/limit is given.
    if (options.sort !== undefined || paged) sql += ` ORDER BY ${compileSort(options.sort)}`;
    if (paged) {
      // The limit is written into the statement (a validated integer): SQLite plans a sort with a
      // known limit as a top-N that stops early, about 3 times faster than with a bound limit for a
      // `limit: 1` on an index; the offset stays bound (pages would each be a statement of their own).
      sql += ` LIMIT ${options.limit === undefined ? -1 : nonNegativeInteger(options.limit, 'limit')} OFFSET ?`;
      params.push(options.skip === undefined ? 0 : nonNegativeInteger(options.skip, 'skip'));
    }
    return { sql, params };
  }

  private setCheckpoint(name: string, position: number): void {
    this.stmt(
      'INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position',
    ).run(name, position);
  }

  /** Validated, quoted table name; the table is created on first use. */
  private table(collection: string): string {
    const table = tableName(collection);
    if (!this.tables.has(table)) {
      this.db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      this.tables.add(table);
    }
    return table;
  }

  /** Prepared statement cache (readers return their single column). */
  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      if (statement.reader) statement.pluck();
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.delete(this.statements.keys().next().value!);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}
