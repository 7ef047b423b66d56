import type Database from 'better-sqlite3';
import type { SnapshotStore, StoredEntry } from '../../core/snapshotStore.ts';
import { closeWal, openWithWal } from '../sqliteWal.ts';
import { StoredKeys } from './storedKeys.ts';
import { SnapshotWriter, type SerializedSave } from './snapshotWriterThread.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS snapshot_cores (
  stream TEXT PRIMARY KEY,
  revision INTEGER NOT NULL,
  core TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshot_keys (
  stream TEXT NOT NULL,
  key TEXT NOT NULL,
  value_id INTEGER NOT NULL,
  PRIMARY KEY (stream, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshot_values (
  id INTEGER PRIMARY KEY,
  value TEXT NOT NULL,
  revision INTEGER NOT NULL
);
`;

/**
 * The tables of earlier builds: the cores, and the entries in one WITHOUT ROWID table with each
 * value inside the key's B-tree. Their content moves into snapshot_cores, snapshot_keys and
 * snapshot_values when the file opens, and they are dropped. The cores have a new table too, so
 * that an earlier build given this file finds no core whose entries it cannot see, and folds its
 * streams from their start instead.
 */
const OLD_CORES = 'snapshots';
const OLD_ENTRIES = 'snapshot_entries';

export interface SqliteSnapshotStoreOptions {
  /**
   * Keep a filter of the stored keys (storedKeys.ts), so that a lookup of a key never stored
   * skips the file (default true). Only a store that writes, or looks up entries, needs it: the
   * webhook thread, which only loads cores, opens the file without.
   */
  filterKeys?: boolean;
  /** The filter could not be built (the store goes on without it). */
  onError?(error: Error): void;
  /**
   * Where `save` writes: `inline` (default), on this connection; `thread`, on the snapshot writer
   * thread's (SNAPSHOT_WRITER; see the class).
   */
  writer?: SnapshotWriterMode;
  /**
   * With `writer: 'thread'`: how long the saves are gathered to post them to the thread as one
   * window (SNAPSHOT_GATHER_MS; default DEFAULT_SNAPSHOT_GATHER_MS; 0: each alone; decision 112).
   */
  gatherMs?: number;
}

/** What became of one save of a window written by `saveWindow`: whether it wrote, or the error that rolled it back. */
type WindowOutcome = { written: boolean } | { error: unknown };

/** Where a SqliteSnapshotStore's `save` writes: `thread`, the snapshot writer thread; `inline`, its own connection. */
export type SnapshotWriterMode = 'thread' | 'inline';

/**
 * Snapshots in an SQLite file of their own (`snapshots.db` of the environment). Derived data, so
 * written at synchronous=NORMAL: a process crash loses nothing committed, a power cut may lose the
 * last snapshots, which only makes the next load fold more of the stream.
 *
 * An entry is a key in `snapshot_keys` (a small B-tree of `(stream, key)`, about 60 bytes an
 * entry) pointing at its value in `snapshot_values` (a row id table, appended to). Most lookups
 * are of keys never stored (a new order, a new application), and such a lookup reads only the
 * small tree, whose upper pages stay in the page cache whatever the history; a new value lands at
 * the end of the values table instead of inside the tree (decision 068). A filter of the stored
 * keys in memory (storedKeys.ts) answers most such lookups without reading the file at all, and
 * spares a save the look-up of a new key's value row (decision 079).
 *
 * With `writer: 'thread'` (SNAPSHOT_WRITER, the service's default), `save` serialises the snapshot
 * here and the snapshot writer thread (snapshotWriterThread.ts) writes it on a connection of its
 * own, so that its B-tree work and page reads stay off the event loop (decision 093); the saves
 * of a window (`gatherMs`) go to the thread together and are written in one transaction (decision
 * 112). Loads and entry lookups read this connection; a save's promise settles once the thread has
 * committed it, so what it wrote is visible here from then on.
 */
export class SqliteSnapshotStore implements SnapshotStore {
  private readonly statements;
  private readonly write;
  private readonly writeWindow;

  private readonly keys: StoredKeys;
  private readonly writer: SnapshotWriter | undefined;

  private constructor(
    private readonly db: Database.Database,
    options: SqliteSnapshotStoreOptions,
  ) {
    db.exec(SCHEMA);
    moveOldEntries(db);
    this.statements = {
      load: db.prepare<[string], { revision: number; core: string }>(
        'SELECT revision, core FROM snapshot_cores WHERE stream = ?',
      ),
      entry: db.prepare<[string, string], { value: string; revision: number }>(
        `SELECT v.value, v.revision FROM snapshot_keys k JOIN snapshot_values v ON v.id = k.value_id
         WHERE k.stream = ? AND k.key = ?`,
      ),
      valueId: db
        .prepare<[string, string], number>('SELECT value_id FROM snapshot_keys WHERE stream = ? AND key = ?')
        .pluck(),
      putCore: db.prepare<[string, number, string]>(
        'INSERT OR REPLACE INTO snapshot_cores (stream, revision, core) VALUES (?, ?, ?)',
      ),
      addValue: db.prepare<[string, number]>('INSERT INTO snapshot_values (value, revision) VALUES (?, ?)'),
      setValue: db.prepare<[string, number, number]>('UPDATE snapshot_values SET value = ?, revision = ? WHERE id = ?'),
      addKey: db.prepare<[string, string, number | bigint]>(
        'INSERT INTO snapshot_keys (stream, key, value_id) VALUES (?, ?, ?)',
      ),
    };
    const st = this.statements;
    this.write = db.transaction(
      (streamId: string, base: number, revision: number, core: string, entries: SerializedSave['entries']): boolean => {
        if ((st.load.get(streamId)?.revision ?? -1) !== base) return false;
        st.putCore.run(streamId, revision, core);
        // Most keys a snapshot writes are new (an order, an application): the filter said so, no read.
        for (const [key, json, mayBeStored] of entries) {
          const id = mayBeStored ? st.valueId.get(streamId, key) : undefined;
          if (id === undefined) {
            st.addKey.run(streamId, key, st.addValue.run(json, revision).lastInsertRowid);
            this.keys.add(streamId, key);
          } else st.setValue.run(json, revision, id);
        }
        return true;
      },
    );
    // Inside this transaction each `write` is a savepoint: a save that fails rolls back alone,
    // unless SQLite ended the whole transaction (then the window fails).
    this.writeWindow = db.transaction((saves: readonly SerializedSave[]) =>
      saves.map((save): WindowOutcome => {
        try {
          return { written: this.write(save.stream, save.base, save.revision, save.core, save.entries) };
        } catch (error) {
          if (!db.inTransaction) throw error;
          return { error };
        }
      }),
    );
    // Last: a file whose statements cannot be prepared throws above, before any filter's thread starts.
    this.keys =
      options.filterKeys === false
        ? StoredKeys.none()
        : StoredKeys.of(db, {
            file: db.name,
            // Each key has its own value's row, appended: the highest row id counts them.
            estimate: (db.prepare('SELECT max(id) FROM snapshot_values').pluck().get() as number | null) ?? 0,
            ...(options.onError ? { onError: options.onError } : {}),
          });
    this.writer = options.writer === 'thread' ? new SnapshotWriter(db.name, options.gatherMs) : undefined;
  }

  /** Opens (creating if needed) the file; a file it cannot use is closed again before the error is thrown. */
  static open(filePath: string, options: SqliteSnapshotStoreOptions = {}): SqliteSnapshotStore {
    return openWithWal(filePath, 'NORMAL', 5_000, (db) => new SqliteSnapshotStore(db, options));
  }

  /** Whether lookups of keys never stored skip the file (false while the filter is built on its thread). */
  get filtering(): boolean {
    return this.keys.ready;
  }

  load(streamId: string): Promise<{ revision: number; core: unknown } | undefined> {
    const row = this.statements.load.get(streamId);
    return Promise.resolve(row && { revision: row.revision, core: JSON.parse(row.core) as unknown });
  }

  entries(streamId: string, keys: readonly string[]): Promise<Map<string, StoredEntry>> {
    const found = new Map<string, StoredEntry>();
    for (const key of keys) {
      if (!this.keys.mightHold(streamId, key)) continue;
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
    const save: SerializedSave = {
      stream: streamId,
      base,
      revision,
      core: JSON.stringify(core),
      entries: entries.map(([key, value]) => [key, JSON.stringify(value ?? null), this.keys.mightHold(streamId, key)]),
    };
    if (!this.writer) {
      try {
        return Promise.resolve(this.saveSerialised(save));
      } catch (error) {
        return Promise.reject(error as Error);
      }
    }
    // The filter holds the keys before the thread writes them: a lookup meanwhile reads the file
    // and finds nothing, as it would have without the filter.
    for (const [key] of save.entries) this.keys.add(streamId, key);
    return this.writer.save(save);
  }

  /** Writes a serialised snapshot on this connection, now (what `save` does inline); answers whether it wrote (SnapshotStore.save). */
  private saveSerialised(save: SerializedSave): boolean {
    return this.write.immediate(save.stream, save.base, save.revision, save.core, save.entries);
  }

  /**
   * Writes a window of serialised snapshots on this connection, in order, in one transaction with
   * a savepoint each (what the snapshot writer thread does with a window): each save's outcome,
   * whether it wrote or the error that rolled it back. Throws, having written none, if the
   * transaction itself fails.
   */
  saveWindow(saves: readonly SerializedSave[]): WindowOutcome[] {
    return this.writeWindow.immediate(saves);
  }

  /** Waits for the saves the thread has not answered, then closes the connections. */
  async close(): Promise<void> {
    this.keys.close();
    try {
      await this.writer?.close();
    } finally {
      closeWal(this.db);
    }
  }
}

/**
 * Moves the snapshots of a file written by an earlier build (OLD_CORES, OLD_ENTRIES) into this
 * build's tables, in one transaction, and drops the old tables. Old tables beside this build's
 * (the file went back to an earlier build and forward again) hold the latest snapshots, consistent
 * among themselves: they replace what this build's tables held. The entries are numbered in the
 * old table's key order, so each key gets its own value's row id.
 */
const moveOldEntries = (db: Database.Database): void => {
  db.transaction(() => {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)")
      .pluck()
      .all(OLD_CORES, OLD_ENTRIES) as string[];
    if (tables.length === 0) return;
    db.exec('DELETE FROM snapshot_cores; DELETE FROM snapshot_keys; DELETE FROM snapshot_values;');
    if (tables.includes(OLD_CORES))
      db.exec(`INSERT INTO snapshot_cores (stream, revision, core) SELECT stream, revision, core FROM ${OLD_CORES}`);
    if (tables.includes(OLD_ENTRIES)) {
      db.exec(
        `INSERT INTO snapshot_values (id, value, revision)
           SELECT row_number() OVER (ORDER BY stream, key), value, revision FROM ${OLD_ENTRIES}`,
      );
      db.exec(
        `INSERT INTO snapshot_keys (stream, key, value_id)
           SELECT stream, key, row_number() OVER (ORDER BY stream, key) FROM ${OLD_ENTRIES}`,
      );
    }
    for (const table of tables) db.exec(`DROP TABLE ${table}`);
  }).immediate();
};
