import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { SnapshotStore, StoredEntry } from '../../core/snapshotStore.ts';
import { closeWal, useWal } from '../sqliteWal.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS snapshots (
  stream TEXT PRIMARY KEY,
  revision INTEGER NOT NULL,
  core TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshot_entries (
  stream TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  revision INTEGER NOT NULL,
  PRIMARY KEY (stream, key)
) WITHOUT ROWID;
`;

/**
 * Snapshots in an SQLite file of their own (`snapshots.db` of the environment). Derived data, so
 * written at synchronous=NORMAL: a process crash loses nothing committed, a power cut may lose the
 * last snapshots, which only makes the next load fold more of the stream.
 */
export class SqliteSnapshotStore implements SnapshotStore {
  private readonly statements;
  private readonly write;

  private constructor(private readonly db: Database.Database) {
    db.exec(SCHEMA);
    this.statements = {
      load: db.prepare<[string], { revision: number; core: string }>(
        'SELECT revision, core FROM snapshots WHERE stream = ?',
      ),
      entry: db.prepare<[string, string], { value: string; revision: number }>(
        'SELECT value, revision FROM snapshot_entries WHERE stream = ? AND key = ?',
      ),
      putCore: db.prepare<[string, number, string]>(
        'INSERT OR REPLACE INTO snapshots (stream, revision, core) VALUES (?, ?, ?)',
      ),
      putEntry: db.prepare<[string, string, string, number]>(
        'INSERT OR REPLACE INTO snapshot_entries (stream, key, value, revision) VALUES (?, ?, ?, ?)',
      ),
    };
    const st = this.statements;
    this.write = db.transaction(
      (
        streamId: string,
        base: number,
        revision: number,
        core: string,
        entries: ReadonlyArray<readonly [string, unknown]>,
      ): boolean => {
        if ((st.load.get(streamId)?.revision ?? -1) !== base) return false;
        st.putCore.run(streamId, revision, core);
        for (const [key, value] of entries) st.putEntry.run(streamId, key, JSON.stringify(value ?? null), revision);
        return true;
      },
    );
  }

  static open(filePath: string): SqliteSnapshotStore {
    fs.mkdirSync(path.dirname(filePath), { recursive: true });
    const db = new Database(filePath);
    useWal(db, 'NORMAL');
    db.pragma('busy_timeout = 5000');
    return new SqliteSnapshotStore(db);
  }

  load(streamId: string): Promise<{ revision: number; core: unknown } | undefined> {
    const row = this.statements.load.get(streamId);
    return Promise.resolve(row && { revision: row.revision, core: JSON.parse(row.core) as unknown });
  }

  entries(streamId: string, keys: readonly string[]): Promise<Map<string, StoredEntry>> {
    const found = new Map<string, StoredEntry>();
    for (const key of keys) {
      const row = this.statements.entry.get(streamId, key);
      if (row) found.set(key, { value: JSON.parse(row.value) as unknown, revision: row.revision });
    }
    return Promise.resolve(found);
  }

  save(
    streamId: string,
    base: number,
    revision: number,
    core: unknown,
    entries: ReadonlyArray<readonly [string, unknown]>,
  ): Promise<boolean> {
    return Promise.resolve(this.write.immediate(streamId, base, revision, JSON.stringify(core), entries));
  }

  close(): Promise<void> {
    closeWal(this.db);
    return Promise.resolve();
  }
}
