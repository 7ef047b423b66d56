/**
 * SQLite storage layout of the embedded event store: opening the database with durable
 * settings, the schema, the prepared statements and the row <-> RecordedEvent mapping.
 */
import type Database from 'better-sqlite3';
import { openWithWal } from '../sqliteWal.ts';
import type { DomainEvent } from '../../core/decider.ts';
import type { PositionedEvent, RecordedEvent } from '../../core/eventStore.ts';

export interface OpenDatabaseOptions {
  /** How long a writer waits for another connection's lock before SQLITE_BUSY. */
  busyTimeoutMs: number;
}

/**
 * `position` is the rowid without AUTOINCREMENT: events are never deleted, so the next rowid is
 * always above every committed one (AUTOINCREMENT would add a write to sqlite_sequence per event).
 * A stream's revision is read from the (stream_id, revision) index, so an append writes no other
 * table.
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position    INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    stream_id   TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    metadata    TEXT    NOT NULL,
    recorded_at TEXT    NOT NULL,
    UNIQUE (stream_id, revision)
  );
`;

/** Opens (creating if needed) the database file: WAL, synchronous=FULL, busy timeout. */
export function openDatabase(filePath: string, options: OpenDatabaseOptions): Database.Database {
  // FULL: the WAL is fsynced on every commit, so a resolved append survives a power loss.
  return openWithWal(filePath, 'FULL', options.busyTimeoutMs, (db) => {
    db.exec(SCHEMA);
    return db;
  });
}

export interface EventRow {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
}

/** One event ready to insert (serialized when the append is queued). */
export interface EventInsert {
  id: string;
  type: string;
  data: string;
  metadata: string;
}

/** A row of the events a rebuild folds: only what a projection reads (PositionedEvent). */
export type FoldRow = Pick<EventRow, 'position' | 'type' | 'data'>;

export function rowToEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    streamId: row.stream_id,
    type: row.type,
    data: JSON.parse(row.data) as Record<string, unknown>,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    revision: row.revision,
    position: row.position,
    recordedAt: row.recorded_at,
  };
}

/** A FoldRow as the event a projection folds. */
export const foldRowToEvent = <E extends DomainEvent>(row: FoldRow): PositionedEvent<E> =>
  ({
    type: row.type,
    data: JSON.parse(row.data) as Record<string, unknown>,
    position: row.position,
  }) as PositionedEvent<E>;

/** Prepared once per connection; better-sqlite3 statements are reusable. */
export function prepareStatements(db: Database.Database) {
  const insertEvent = db.prepare<[string, string, number, string, string, string, string]>(
    `INSERT INTO events (id, stream_id, revision, type, data, metadata, recorded_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const streamRevision = db.prepare<[string], { revision: number }>(
    'SELECT revision FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1',
  );
  const readStream = db.prepare<[string, number, number], EventRow>(
    `SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?`,
  );
  const readAll = db.prepare<[number, number], EventRow>(
    'SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?',
  );
  // a page of readAll: how many events it spans and the position of its last
  const readAllWindow = db.prepare<[number, number], { scanned: number; last: number | null }>(
    'SELECT COUNT(*) AS scanned, MAX(position) AS last FROM (SELECT position FROM events WHERE position > ? ORDER BY position LIMIT ?)',
  );
  // the events of a page (after, through] of the types listed (a JSON array)
  const ofTypes =
    'FROM events WHERE position > ? AND position <= ? AND type IN (SELECT value FROM json_each(?)) ORDER BY position';
  const readAllOfTypes = db.prepare<[number, number, string], EventRow>(`SELECT * ${ofTypes}`);
  // the same, only the columns a projection folds: a row of three columns instead of eight is
  // materialized in about half the time
  const foldAllOfTypes = db.prepare<[number, number, string], FoldRow>(`SELECT position, type, data ${ofTypes}`);
  // data_version changes only when another connection commits to the file
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const headPosition = db.prepare<[], { head: number }>('SELECT COALESCE(MAX(position), 0) AS head FROM events');
  return {
    insertEvent,
    streamRevision,
    readStream,
    readAll,
    readAllWindow,
    readAllOfTypes,
    foldAllOfTypes,
    headPosition,
    dataVersion,
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
