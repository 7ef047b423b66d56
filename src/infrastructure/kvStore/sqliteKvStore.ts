import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Clock } from '../../domain/clock.ts';
import { useWal } from '../sqliteWal.ts';
import type { KvStore } from '../../core/kvStore.ts';

export interface SqliteKvStoreOptions {
  /**
   * Namespaces whose records can be recomputed (quotes): written through a second connection
   * with synchronous=NORMAL, safe against a process crash, not against a power cut, and without
   * an fsync per write. Everything else (idempotency records) is synchronous=FULL.
   */
  relaxedNamespaces?: string[];
}

const openConnection = (filePath: string, synchronous: 'FULL' | 'NORMAL'): Database.Database => {
  const db = new Database(filePath);
  useWal(db, synchronous);
  db.pragma('busy_timeout = 5000');
  return db;
};

const statements = (db: Database.Database) => ({
  get: db.prepare<[string, string, number], { value: string }>(
    'SELECT value FROM kv WHERE namespace = ? AND key = ? AND expires_at > ?',
  ),
  put: db.prepare<[string, string, string, number]>(
    'INSERT OR REPLACE INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)',
  ),
  putIfAbsent: db.prepare<
    [string, string, string, number, number]
  >(`INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
    WHERE kv.expires_at <= ?`),
  delete: db.prepare<[string, string]>('DELETE FROM kv WHERE namespace = ? AND key = ?'),
  purge: db.prepare<[number]>('DELETE FROM kv WHERE expires_at <= ?'),
});

/** KvStore on SQLite (WAL): durable namespaces at synchronous=FULL, relaxed ones at NORMAL. */
export class SqliteKvStore implements KvStore {
  private readonly durable: ReturnType<typeof statements>;
  private readonly relaxed: ReturnType<typeof statements>;
  private readonly relaxedNamespaces: Set<string>;

  private constructor(
    private readonly connections: Database.Database[],
    private readonly clock: Clock,
    relaxedNamespaces: string[],
  ) {
    this.durable = statements(connections[0]!);
    this.relaxed = statements(connections[1] ?? connections[0]!);
    this.relaxedNamespaces = new Set(relaxedNamespaces);
  }

  static open(filePath: string, clock: Clock, options: SqliteKvStoreOptions = {}): SqliteKvStore {
    if (filePath !== ':memory:') fs.mkdirSync(path.dirname(filePath), { recursive: true });
    const durable = openConnection(filePath, 'FULL');
    durable.exec(`CREATE TABLE IF NOT EXISTS kv (
      namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER NOT NULL,
      PRIMARY KEY (namespace, key)) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS kv_expires ON kv(expires_at);`);
    const relaxed =
      (options.relaxedNamespaces?.length ?? 0) > 0 && filePath !== ':memory:'
        ? [openConnection(filePath, 'NORMAL')]
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

  async purgeExpired(now: number): Promise<number> {
    return this.durable.purge.run(now).changes;
  }

  /** The synchronous setting writes of this namespace commit with (2 = FULL, 1 = NORMAL). */
  synchronousOf(namespace: string): number {
    const db = this.relaxedNamespaces.has(namespace) ? this.connections.at(-1)! : this.connections[0]!;
    return db.pragma('synchronous', { simple: true }) as number;
  }

  async close(): Promise<void> {
    for (const db of this.connections) db.close();
  }
}
