import type Database from 'better-sqlite3';
import type { Clock } from '../../domain/clock.ts';
import { closeWal, openWithWal } from '../sqliteWal.ts';
import type { KvStore, OwnedPut } from '../../core/kvStore.ts';

export interface SqliteKvStoreOptions {
  /**
   * Namespaces whose records can be recomputed (quotes): written through a second connection
   * with synchronous=NORMAL, safe against a process crash, not against a power cut, and without
   * an fsync per write. Everything else (idempotency records) is synchronous=FULL.
   */
  relaxedNamespaces?: string[];
}

const BUSY_TIMEOUT_MS = 5_000;

const statements = (db: Database.Database) => ({
  get: db.prepare<[string, string, number], { value: string }>(
    'SELECT value FROM kv WHERE namespace = ? AND key = ? AND expires_at > ?',
  ),
  // Upserts rather than INSERT OR REPLACE: a REPLACE's delete would not fire kv_owned_delete.
  put: db.prepare<[string, string, string, number]>(
    `INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, owner = NULL`,
  ),
  putIfAbsent: db.prepare<
    [string, string, string, number, number]
  >(`INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, owner = NULL
    WHERE kv.expires_at <= ?`),
  delete: db.prepare<[string, string]>('DELETE FROM kv WHERE namespace = ? AND key = ?'),
  purge: db.prepare<[number]>('DELETE FROM kv WHERE expires_at <= ?'),
  ownerOf: db.prepare<[string, string, number], { owner: string | null }>(
    'SELECT owner FROM kv WHERE namespace = ? AND key = ? AND expires_at > ?',
  ),
  stored: db.prepare<[string, string], { stored: number }>(
    'SELECT stored FROM kv_owners WHERE namespace = ? AND owner = ?',
  ),
  expired: db.prepare<[string, string, number], { count: number }>(
    'SELECT count(*) AS count FROM kv WHERE namespace = ? AND owner = ? AND expires_at <= ?',
  ),
  nextExpiry: db.prepare<[string, string, number], { next: number | null }>(
    'SELECT min(expires_at) AS next FROM kv WHERE namespace = ? AND owner = ? AND expires_at > ?',
  ),
  ownedKeys: db.prepare<[string, string, number], { key: string; expires_at: number }>(
    'SELECT key, expires_at FROM kv WHERE namespace = ? AND owner = ? AND expires_at > ? ORDER BY expires_at, key',
  ),
  putOwned: db.prepare<[string, string, string, number, string]>(
    `INSERT INTO kv (namespace, key, value, expires_at, owner) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, owner = excluded.owner`,
  ),
});

type Statements = ReturnType<typeof statements>;

/**
 * putOwned's check and write in one IMMEDIATE transaction: no other connection writes between them.
 * The owner's stored records (kv_owners, live or expired and not yet purged) bound its live ones,
 * so below the limit nothing is counted; at it, the live ones are the stored ones less the expired
 * ones, which housekeeping purges (the index on (namespace, owner, expires_at) reaches them alone).
 */
const ownedPut = (db: Database.Database, st: Statements) =>
  db.transaction(
    (
      namespace: string,
      key: string,
      json: string,
      expiresAt: number,
      owner: string,
      limit: number,
      now: number,
    ): OwnedPut => {
      const replacing = st.ownerOf.get(namespace, key, now)?.owner === owner;
      if (!replacing) {
        const stored = st.stored.get(namespace, owner)?.stored ?? 0;
        if (stored >= limit) {
          const live = stored - st.expired.get(namespace, owner, now)!.count;
          if (live >= limit)
            return { stored: false, count: live, nextExpiresAt: st.nextExpiry.get(namespace, owner, now)!.next };
        }
      }
      st.putOwned.run(namespace, key, json, expiresAt, owner);
      return { stored: true };
    },
  );

/**
 * `owner` (an API key id, for per-key quotas) came after the first files: added to a table that
 * lacks it. Only owned records are in its index.
 */
const addOwner = (db: Database.Database): void => {
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(kv)').all();
  if (!columns.some((c) => c.name === 'owner')) db.exec('ALTER TABLE kv ADD COLUMN owner TEXT');
  db.exec('CREATE INDEX IF NOT EXISTS kv_owner ON kv(namespace, owner, expires_at) WHERE owner IS NOT NULL');
};

/**
 * `kv_owners`: how many records of `kv` each owner has per namespace, live or expired and not yet
 * purged, kept by triggers on every insert, delete and change of owner (the writes are upserts,
 * never INSERT OR REPLACE, whose delete fires no trigger). Counted afresh from `kv` at every open,
 * in one transaction with the schema: a file from before the table, or one a build without the
 * triggers' upserts wrote to, starts from the true counts (one pass over the owned records).
 */
const countOwned = (db: Database.Database): void => {
  db.transaction(() => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS kv_owners (
        namespace TEXT NOT NULL, owner TEXT NOT NULL, stored INTEGER NOT NULL,
        PRIMARY KEY (namespace, owner)) WITHOUT ROWID;
      DELETE FROM kv_owners;
      INSERT INTO kv_owners (namespace, owner, stored)
        SELECT namespace, owner, count(*) FROM kv WHERE owner IS NOT NULL GROUP BY namespace, owner;
      CREATE TRIGGER IF NOT EXISTS kv_owned_insert AFTER INSERT ON kv WHEN NEW.owner IS NOT NULL BEGIN
        INSERT INTO kv_owners (namespace, owner, stored) VALUES (NEW.namespace, NEW.owner, 1)
          ON CONFLICT (namespace, owner) DO UPDATE SET stored = stored + 1;
      END;
      CREATE TRIGGER IF NOT EXISTS kv_owned_delete AFTER DELETE ON kv WHEN OLD.owner IS NOT NULL BEGIN
        UPDATE kv_owners SET stored = stored - 1 WHERE namespace = OLD.namespace AND owner = OLD.owner;
      END;
      CREATE TRIGGER IF NOT EXISTS kv_owner_change AFTER UPDATE OF owner ON kv WHEN OLD.owner IS NOT NEW.owner BEGIN
        UPDATE kv_owners SET stored = stored - 1 WHERE namespace = OLD.namespace AND owner = OLD.owner;
        INSERT INTO kv_owners (namespace, owner, stored) SELECT NEW.namespace, NEW.owner, 1 WHERE NEW.owner IS NOT NULL
          ON CONFLICT (namespace, owner) DO UPDATE SET stored = stored + 1;
      END;`);
  }).immediate();
};

/** KvStore on SQLite (WAL): durable namespaces at synchronous=FULL, relaxed ones at NORMAL. */
export class SqliteKvStore implements KvStore {
  private readonly durable: Statements;
  private readonly relaxed: Statements;
  private readonly durablePut: ReturnType<typeof ownedPut>;
  private readonly relaxedPut: ReturnType<typeof ownedPut>;
  private readonly relaxedNamespaces: Set<string>;

  private constructor(
    private readonly connections: Database.Database[],
    private readonly clock: Clock,
    relaxedNamespaces: string[],
  ) {
    this.durable = statements(connections[0]!);
    this.relaxed = statements(connections[1] ?? connections[0]!);
    this.durablePut = ownedPut(connections[0]!, this.durable);
    this.relaxedPut = ownedPut(connections[1] ?? connections[0]!, this.relaxed);
    this.relaxedNamespaces = new Set(relaxedNamespaces);
  }

  /** Opens (creating if needed) the file; a file whose schema it cannot set up is closed again before the error is thrown. */
  static open(filePath: string, clock: Clock, options: SqliteKvStoreOptions = {}): SqliteKvStore {
    const durable = openWithWal(filePath, 'FULL', BUSY_TIMEOUT_MS, (db) => {
      db.exec(`CREATE TABLE IF NOT EXISTS kv (
        namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER NOT NULL,
        PRIMARY KEY (namespace, key)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS kv_expires ON kv(expires_at);`);
      addOwner(db);
      countOwned(db);
      return db;
    });
    const relaxed =
      (options.relaxedNamespaces?.length ?? 0) > 0 && filePath !== ':memory:'
        ? [openWithWal(filePath, 'NORMAL', BUSY_TIMEOUT_MS, (db) => db)]
        : [];
    return new SqliteKvStore([durable, ...relaxed], clock, options.relaxedNamespaces ?? []);
  }

  private for(namespace: string) {
    return this.relaxedNamespaces.has(namespace) ? this.relaxed : this.durable;
  }

  async get<T>(namespace: string, key: string): Promise<T | null> {
    const row = this.for(namespace).get.get(namespace, key, this.clock.now().getTime());
    return row ? (JSON.parse(row.value) as T) : null;
  }

  async put<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<void> {
    this.for(namespace).put.run(namespace, key, JSON.stringify(value), expiresAt);
  }

  async putIfAbsent<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<boolean> {
    return (
      this.for(namespace).putIfAbsent.run(namespace, key, JSON.stringify(value), expiresAt, this.clock.now().getTime())
        .changes > 0
    );
  }

  async delete(namespace: string, key: string): Promise<void> {
    this.for(namespace).delete.run(namespace, key);
  }

  async putOwned<T>(
    namespace: string,
    key: string,
    value: T,
    expiresAt: number,
    quota: { owner: string; limit: number },
  ): Promise<OwnedPut> {
    const put = this.relaxedNamespaces.has(namespace) ? this.relaxedPut : this.durablePut;
    const json = JSON.stringify(value);
    return put.immediate(namespace, key, json, expiresAt, quota.owner, quota.limit, this.clock.now().getTime());
  }

  async ownedKeys(namespace: string, owner: string): Promise<Array<{ key: string; expiresAt: number }>> {
    return this.for(namespace)
      .ownedKeys.all(namespace, owner, this.clock.now().getTime())
      .map((row) => ({ key: row.key, expiresAt: row.expires_at }));
  }

  async purgeExpired(now: number): Promise<number> {
    return this.durable.purge.run(now).changes;
  }

  /** The synchronous setting writes of this namespace commit with (2 = FULL, 1 = NORMAL). */
  synchronousOf(namespace: string): number {
    const db = this.relaxedNamespaces.has(namespace) ? this.connections.at(-1)! : this.connections[0]!;
    return db.pragma('synchronous', { simple: true }) as number;
  }

  async close(): Promise<void> {
    for (const db of this.connections) closeWal(db);
  }
}
