import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Clock } from '../../domain/clock.ts';
import type { KvStore } from './kvStore.ts';

/** KvStore on SQLite (WAL, synchronous=FULL: an idempotency record must outlive a crash). */
export class SqliteKvStore implements KvStore {
  private constructor(private readonly db: Database.Database, private readonly clock: Clock) {}

  static open(filePath: string, clock: Clock): SqliteKvStore {
    if (filePath !== ':memory:') fs.mkdirSync(path.dirname(filePath), { recursive: true });
    const db = new Database(filePath);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.exec(`CREATE TABLE IF NOT EXISTS kv (
      namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER NOT NULL,
      PRIMARY KEY (namespace, key)) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS kv_expires ON kv(expires_at);`);
    return new SqliteKvStore(db, clock);
  }

  async get<T>(namespace: string, key: string): Promise<T | null> {
    const row = this.db.prepare('SELECT value FROM kv WHERE namespace = ? AND key = ? AND expires_at > ?')
      .get(namespace, key, this.clock.now().getTime()) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : null;
  }

  async put<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<void> {
    this.db.prepare('INSERT OR REPLACE INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)')
      .run(namespace, key, JSON.stringify(value), expiresAt);
  }

  async putIfAbsent<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<boolean> {
    const now = this.clock.now().getTime();
    const result = this.db.prepare(`INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
      WHERE kv.expires_at <= ?`).run(namespace, key, JSON.stringify(value), expiresAt, now);
    return result.changes > 0;
  }

  async delete(namespace: string, key: string): Promise<void> {
    this.db.prepare('DELETE FROM kv WHERE namespace = ? AND key = ?').run(namespace, key);
  }

  async purgeExpired(now: number): Promise<number> {
    return this.db.prepare('DELETE FROM kv WHERE expires_at <= ?').run(now).changes;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
