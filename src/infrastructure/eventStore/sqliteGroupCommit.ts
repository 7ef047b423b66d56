/**
 * Group commit for the SQLite event store. Appends issued in the same tick are queued and
 * written by ONE `BEGIN IMMEDIATE` transaction (one fsync for the whole batch):
 *
 * - each append is checked, in arrival order, against its stream's revision including the
 *   appends before it in the same batch; a failed check rejects only that append; an append to
 *   several streams is checked on all of them before any is written (all or nothing);
 * - an append-specific SQLite error (e.g. a duplicate event id) rolls back and rejects only that
 *   append. Savepoints cost two statements per append and such errors are rare, so a batch is
 *   first written WITHOUT savepoints (a failed expected-revision check writes nothing, so needs
 *   none); only when an append fails mid-write is that transaction rolled back and the batch
 *   written again with one savepoint per append (same order, same checks, same outcomes);
 * - if the transaction itself fails (SQLITE_BUSY, disk error, failed COMMIT), nothing is
 *   written and every append of the batch is rejected with that error;
 * - promises are settled only after COMMIT returned, i.e. once the batch is durable.
 */
import type Database from 'better-sqlite3';
import { WrongExpectedRevisionError, type AppendResult, type ExpectedRevision } from '../../core/eventStore.ts';
import type { EventInsert, EventRow, Statements } from './sqliteSchema.ts';

/** One stream's part of an append. */
export interface StreamPart {
  streamId: string;
  events: EventInsert[];
  expectedRevision: ExpectedRevision;
}

/**
 * An append to one stream, or an atomic append to several (`parts`, distinct streams): every
 * part's expectation is checked before anything is written, and either every part is written or
 * none. Resolves with one result per part.
 */
export interface PendingAppend {
  parts: StreamPart[];
  resolve: (results: AppendResult[]) => void;
  reject: (error: unknown) => void;
}

export interface FlushInfo {
  /** Appends handled by the transaction (successful or rejected). */
  appends: number;
  /** Events written. */
  events: number;
}

/**
 * The events one transaction committed, as stored rows in position order, and the head position
 * right before it (read under the write lock): no other event lies between `after` and them. The
 * store hands this to its subscriptions so that a caught-up one need not read them back.
 */
export interface CommittedEvents {
  after: number;
  rows: EventRow[];
}

type Outcome = { ok: true; results: AppendResult[]; rows: EventRow[] } | { ok: false; error: unknown };

/** Thrown out of the savepoint-less transaction when an append failed mid-write (see above). */
class AppendFailedWithoutSavepoint extends Error {
  constructor(cause: unknown) {
    super('append failed; batch to be written with savepoints', { cause });
  }
}

/**
 * Observer of each batch transaction while it holds the write lock (the writer thread's change
 * token, sqliteWriterThread.ts): `beginning` right before the head position is read at its start,
 * `began` with that position, `ending` with the head position its writes lead to, right before
 * COMMIT. A transaction that is rolled back (and written again with savepoints) calls `beginning`
 * and `began` again and `ending` only once it is committed.
 */
export interface TransactionObserver {
  beginning(): void;
  began(after: number): void;
  ending(head: number): void;
}

interface BatchResult {
  outcomes: Outcome[];
  after: number;
}

export function expectationHolds(expected: ExpectedRevision, current: number): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return current === -1;
    case 'stream_exists':
      return current >= 0;
    default:
      return expected === current;
  }
}

export class GroupCommitter {
  private queue: PendingAppend[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private readonly commitBatch: (batch: PendingAppend[]) => BatchResult;
  private readonly commitBatchWithSavepoints: (batch: PendingAppend[]) => BatchResult;
  private readonly appendOne: (append: PendingAppend, recordedAt: string) => Outcome;

  constructor(
    private readonly db: Database.Database,
    private readonly statements: Statements,
    /** Called after each successful COMMIT (before the appends' promises settle). */
    private readonly onCommitted: (info: FlushInfo, committed: CommittedEvents) => void,
    private readonly observer?: TransactionObserver,
  ) {
    // Nested better-sqlite3 transaction = SAVEPOINT ... RELEASE / ROLLBACK TO.
    this.appendOne = db.transaction((append: PendingAppend, recordedAt: string) => this.write(append, recordedAt));
    this.commitBatch = db.transaction((batch: PendingAppend[]) => this.writeBatch(batch, false)).immediate;
    this.commitBatchWithSavepoints = db.transaction((batch: PendingAppend[]) => this.writeBatch(batch, true)).immediate;
  }

  get pending(): number {
    return this.queue.length;
  }

  enqueue(append: PendingAppend): void {
    this.queue.push(append);
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Writes everything queued now, in one transaction. Synchronous. */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;

    let written: BatchResult;
    try {
      try {
        written = this.commitBatch(batch);
      } catch (error) {
        if (!(error instanceof AppendFailedWithoutSavepoint)) throw error;
        written = this.commitBatchWithSavepoints(batch); // rolled back: write it again, isolating each append
      }
    } catch (error) {
      for (const append of batch) append.reject(error);
      return;
    }
    const { outcomes } = written;
    const rows = outcomes.flatMap((outcome) => (outcome.ok ? outcome.rows : []));
    try {
      this.onCommitted({ appends: batch.length, events: rows.length }, { after: written.after, rows });
    } catch {
      // An observer must never keep committed appends from resolving.
    }
    batch.forEach((append, i) => {
      const outcome = outcomes[i];
      if (outcome.ok) append.resolve(outcome.results);
      else append.reject(outcome.error);
    });
  }

  private writeBatch(batch: PendingAppend[], savepoints: boolean): BatchResult {
    const recordedAt = new Date().toISOString();
    // Under the write lock: every event committed before this transaction is at or below it.
    this.observer?.beginning();
    const after = this.statements.headPosition.get()!.head;
    this.observer?.began(after);
    const outcomes = batch.map((append): Outcome => {
      try {
        return savepoints ? this.appendOne(append, recordedAt) : this.write(append, recordedAt);
      } catch (error) {
        // SQLite may abort the whole transaction on some errors (SQLITE_FULL, IOERR, BUSY):
        // then the batch cannot go on, and every append is rejected.
        if (!this.db.inTransaction) throw error;
        // Without a savepoint this append may be half-written: roll back, write again with them.
        if (!savepoints) throw new AppendFailedWithoutSavepoint(error);
        return { ok: false, error };
      }
    });
    if (this.observer) {
      let head = after;
      for (const outcome of outcomes) if (outcome.ok && outcome.rows.length > 0) head = outcome.rows.at(-1)!.position;
      this.observer.ending(head);
    }
    return { outcomes, after };
  }

  /**
   * One append (of one or several streams). A failed expected-revision check is an outcome
   * (checked for every part before anything is written); any other error is thrown (the caller's
   * savepoint, or the whole transaction, is rolled back).
   */
  private write(append: PendingAppend, recordedAt: string): Outcome {
    // Read inside the transaction: sees the appends written earlier in this batch.
    const currents = append.parts.map(({ streamId, expectedRevision }) => {
      const current = this.statements.streamRevision.get(streamId)?.revision ?? -1;
      return expectationHolds(expectedRevision, current)
        ? current
        : new WrongExpectedRevisionError(streamId, expectedRevision, current);
    });
    const failed = currents.find((c): c is WrongExpectedRevisionError => c instanceof WrongExpectedRevisionError);
    if (failed) return { ok: false, error: failed };
    const rows: EventRow[] = [];
    const results = append.parts.map(({ streamId, events }, i): AppendResult => {
      let revision = currents[i] as number;
      if (events.length === 0)
        return { nextExpectedRevision: revision, position: this.statements.headPosition.get()!.head };
      let position = 0;
      for (const event of events) {
        revision += 1;
        const info = this.statements.insertEvent.run(
          event.id,
          streamId,
          revision,
          event.type,
          event.data,
          event.metadata,
          recordedAt,
        );
        position = Number(info.lastInsertRowid);
        rows.push({
          position,
          id: event.id,
          stream_id: streamId,
          revision,
          type: event.type,
          data: event.data,
          metadata: event.metadata,
          recorded_at: recordedAt,
        });
      }
      return { nextExpectedRevision: revision, position };
    });
    return { ok: true, results, rows };
  }
}
