/**
 * Group commit for the SQLite event store. Appends issued in the same tick are queued and
 * written by ONE `BEGIN IMMEDIATE` transaction (one fsync for the whole batch):
 *
 * - each append is checked, in arrival order, against its stream's revision including the
 *   appends before it in the same batch; a failed check rejects only that append;
 * - each append runs in its own savepoint, so an append-specific SQLite error (e.g. a
 *   duplicate event id) rolls back and rejects only that append;
 * - if the transaction itself fails (SQLITE_BUSY, disk error, failed COMMIT), nothing is
 *   written and every append of the batch is rejected with that error;
 * - promises are settled only after COMMIT returned, i.e. once the batch is durable.
 */
import type Database from 'better-sqlite3';
import { WrongExpectedRevisionError, type AppendResult, type ExpectedRevision } from './eventStore.ts';
import type { EventInsert, Statements } from './sqliteSchema.ts';

export interface PendingAppend {
  streamId: string;
  events: EventInsert[];
  expectedRevision: ExpectedRevision;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

export interface FlushInfo {
  /** Appends handled by the transaction (successful or rejected). */
  appends: number;
  /** Events written. */
  events: number;
}

type Outcome = { ok: true; result: AppendResult } | { ok: false; error: unknown };

export function expectationHolds(expected: ExpectedRevision, current: number): boolean {
  switch (expected) {
    case 'any': return true;
    case 'no_stream': return current === -1;
    case 'stream_exists': return current >= 0;
    default: return expected === current;
  }
}

export class GroupCommitter {
  private queue: PendingAppend[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private readonly commitBatch: (batch: PendingAppend[]) => Outcome[];
  private readonly appendOne: (append: PendingAppend, recordedAt: string) => AppendResult;

  constructor(
    private readonly db: Database.Database,
    private readonly statements: Statements,
    /** Called after each successful COMMIT (before the appends' promises settle). */
    private readonly onCommitted: (info: FlushInfo) => void,
  ) {
    // Nested better-sqlite3 transaction = SAVEPOINT ... RELEASE / ROLLBACK TO.
    this.appendOne = db.transaction((append: PendingAppend, recordedAt: string) => this.write(append, recordedAt));
    this.commitBatch = db.transaction((batch: PendingAppend[]) => this.writeBatch(batch)).immediate;
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

    let outcomes: Outcome[];
    try {
      outcomes = this.commitBatch(batch);
    } catch (error) {
      for (const append of batch) append.reject(error);
      return;
    }
    const events = batch.reduce((n, append, i) => n + (outcomes[i].ok ? append.events.length : 0), 0);
    try {
      this.onCommitted({ appends: batch.length, events });
    } catch {
      // An observer must never keep committed appends from resolving.
    }
    batch.forEach((append, i) => {
      const outcome = outcomes[i];
      if (outcome.ok) append.resolve(outcome.result);
      else append.reject(outcome.error);
    });
  }

  private writeBatch(batch: PendingAppend[]): Outcome[] {
    const recordedAt = new Date().toISOString();
    return batch.map((append): Outcome => {
      try {
        return { ok: true, result: this.appendOne(append, recordedAt) };
      } catch (error) {
        // SQLite may abort the whole transaction on some errors (SQLITE_FULL, IOERR, BUSY):
        // then the batch cannot go on, and every append is rejected.
        if (!this.db.inTransaction) throw error;
        return { ok: false, error };
      }
    });
  }

  private write(append: PendingAppend, recordedAt: string): AppendResult {
    const { streamId, events, expectedRevision } = append;
    // Read inside the transaction: sees the appends written earlier in this batch.
    const current = this.statements.streamRevision.get(streamId)?.revision ?? -1;
    if (!expectationHolds(expectedRevision, current)) {
      throw new WrongExpectedRevisionError(streamId, expectedRevision, current);
    }
    if (events.length === 0) {
      return { nextExpectedRevision: current, position: this.statements.headPosition.get()!.head };
    }
    let revision = current;
    let position = 0;
    for (const event of events) {
      revision += 1;
      const info = this.statements.insertEvent.run(
        event.id, streamId, revision, event.type, event.data, event.metadata, recordedAt,
      );
      position = Number(info.lastInsertRowid);
    }
    this.statements.upsertStream.run(streamId, revision);
    return { nextExpectedRevision: revision, position };
  }
}
