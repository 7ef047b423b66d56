/**
 * Catch-up subscription over the SQLite event store. One loop per subscription:
 *
 *   read up to maxBatchSize events after the checkpoint
 *   -> if any: await handler(batch), advance the checkpoint, repeat
 *   -> if none (caught up): wait until woken by a local commit or the poll timer fires
 *
 * The loop never calls the handler twice at once and never skips or repeats a position:
 * positions are allocated inside BEGIN IMMEDIATE transactions, so a reader sees either all or
 * none of a transaction's events and every smaller position is already committed.
 * Polling delivers events committed by other processes on the same file.
 *
 * This process's own commits are handed over as they commit (`offer`: the stored rows and the
 * head position right before the transaction) and queued. The loop takes queued events instead of
 * reading the store ONLY when they continue exactly from its checkpoint: the checkpoint is the
 * chunk's `after` (nothing else was committed in between, since `after` was read under the write
 * lock) or one of the chunk's positions (the store read stopped inside the chunk). Otherwise (the
 * loop is behind, another process committed in between, the queue overflowed) it reads the store
 * as before and drops the queued events it has thereby delivered. Each delivery parses the rows
 * afresh, so handlers never share event objects. After a delivery from the queue the loop waits
 * without reading the store: up to its checkpoint it has seen everything, and a later commit of
 * another process is found by the poll or by the next local commit (whose `after` will not match).
 *
 * While the subscriber's `onlyTypes` names event types, the loop reads the store instead of the queue
 * (which it empties), and passes over the events of other types without decoding them: it looks up
 * to TYPED_SCAN events ahead for the first of those types and delivers it alone (the subscriber may
 * then want every type again, starting with the next event), or, when there is none, an empty batch
 * reaching the last event looked at.
 */
import type { AnyEvent, DomainEvent } from '../../core/decider.ts';
import type { BatchHandler, RecordedEvent, Subscription } from '../../core/eventStore.ts';
import type { EventRow } from './sqliteSchema.ts';
import type { CommittedEvents } from './sqliteGroupCommit.ts';

/** Most events queued by `offer`; beyond it the queue is dropped and the loop reads the store. */
const MAX_QUEUED_EVENTS = 5_000;
/** Most events a read for `onlyTypes` looks at (only their positions and types are read). */
const TYPED_SCAN = 10_000;

export interface SubscriptionSource<E extends DomainEvent = AnyEvent> {
  /** Events with position > after, in position order, at most maxCount. */
  readAfter(after: number, maxCount: number): RecordedEvent<E>[];
  /** Turns a committed row into the event it holds (the store's decoder, upcaster included). */
  decode(row: EventRow): RecordedEvent<E>;
  /**
   * The first event after `after` of one of `types`, looking at most `maxScan` events ahead, and
   * the position the look reached: the event's, or the last event looked at (`after` when none
   * follows). Absent: the source cannot filter, and `onlyTypes` is ignored.
   */
  firstOfTypes?(
    after: number,
    maxScan: number,
    types: readonly string[],
  ): { event?: RecordedEvent<E>; through: number };
}

export interface SqliteSubscriptionOptions {
  after: number;
  maxBatchSize: number;
  pollIntervalMs: number;
  onError: (error: unknown) => void;
  /** See SubscribeOptions.onlyTypes. */
  onlyTypes?: () => readonly string[] | undefined;
  /** Called once the loop has ended (closed or failed). */
  onEnd: () => void;
}

export class SqliteSubscription<E extends DomainEvent = AnyEvent> implements Subscription {
  private checkpoint: number;
  private stopped = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly done: Promise<void>;
  /** This process's commits not yet delivered, oldest first (see the top of this file). */
  private queued: CommittedEvents[] = [];
  private queuedEvents = 0;
  /** The queue was dropped (overflow): the store must be read before waiting again. */
  private mustRead = false;

  constructor(
    private readonly source: SubscriptionSource<E>,
    private readonly handler: BatchHandler<E>,
    private readonly options: SqliteSubscriptionOptions,
  ) {
    this.checkpoint = options.after;
    this.done = this.run().finally(options.onEnd);
  }

  /** Position of the last event handed to the handler successfully. */
  get position(): number {
    return this.checkpoint;
  }

  /** Wakes a caught-up loop: new events were committed. */
  notify(): void {
    this.wake?.();
  }

  /**
   * Makes the loop read the store at its next turn (now, if it waits): for commits whose rows
   * were not handed over and may never be, such as before a graceful stop.
   */
  catchUp(): void {
    this.mustRead = true;
    this.notify();
  }

  /** Hands over the events this process just committed, and wakes the loop. */
  offer(committed: CommittedEvents): void {
    if (this.stopped || committed.rows.length === 0) return;
    if (this.queuedEvents + committed.rows.length > MAX_QUEUED_EVENTS) {
      // Far behind: the store has them all; reading it is as good.
      this.dropQueued();
      this.mustRead = true;
    } else {
      this.queued.push(committed);
      this.queuedEvents += committed.rows.length;
    }
    this.notify();
  }

  /**
   * Stops delivery; resolves once no handler call is running. Calling it from inside the
   * handler is allowed, but awaiting it there would wait for that very handler call.
   */
  close(): Promise<void> {
    this.stopped = true;
    this.notify();
    return this.done;
  }

  private async run(): Promise<void> {
    // Start asynchronously so that subscribeToAll() returns before the first read.
    await Promise.resolve();
    try {
      while (!this.stopped) {
        const types = this.source.firstOfTypes ? this.options.onlyTypes?.() : undefined;
        if (types) this.dropQueued(); // read from the store, which passes over the other types
        const taken = types ? undefined : this.takeQueued();
        if (taken === undefined) this.mustRead = false;
        const { batch, through } = taken ? { batch: taken, through: taken.at(-1)!.position } : this.read(types);
        if (through === this.checkpoint) {
          await this.waitForEvents();
          continue;
        }
        await this.handler(batch, through);
        this.checkpoint = through;
        if (taken && this.queued.length === 0 && !this.mustRead) await this.waitForEvents(); // see the top of this file
      }
    } catch (error) {
      this.stopped = true;
      this.reportError(error);
    }
  }

  /** The store's next batch after the checkpoint, and the position it reaches (the checkpoint: nothing new). */
  private read(types: readonly string[] | undefined): { batch: RecordedEvent<E>[]; through: number } {
    if (types) {
      const { event, through } = this.source.firstOfTypes!(this.checkpoint, TYPED_SCAN, types);
      return { batch: event ? [event] : [], through };
    }
    const batch = this.source.readAfter(this.checkpoint, this.options.maxBatchSize);
    return { batch, through: batch.at(-1)?.position ?? this.checkpoint };
  }

  /**
   * Queued events that continue exactly from the checkpoint, at most maxBatchSize, or undefined
   * when the store must be read. Drops queued events at or before the checkpoint.
   */
  private takeQueued(): RecordedEvent<E>[] | undefined {
    const rows: EventRow[] = [];
    let position = this.checkpoint;
    while (this.queued.length > 0 && rows.length < this.options.maxBatchSize) {
      const chunk = this.queued[0];
      const last = chunk.rows[chunk.rows.length - 1].position;
      if (last <= position) {
        this.dropFirst(chunk.rows.length);
        continue;
      } // delivered from the store
      let start = 0;
      if (chunk.after !== position) {
        start = chunk.rows.findIndex((row) => row.position === position) + 1;
        if (start === 0) break; // a gap: events of another process, or not yet read
      }
      const end = Math.min(chunk.rows.length, start + this.options.maxBatchSize - rows.length);
      for (let i = start; i < end; i += 1) rows.push(chunk.rows[i]);
      position = chunk.rows[end - 1].position;
      if (end < chunk.rows.length) {
        this.queued[0] = { after: position, rows: chunk.rows.slice(end) };
        this.queuedEvents -= end;
        break;
      }
      this.dropFirst(chunk.rows.length);
    }
    return rows.length === 0 ? undefined : rows.map(this.source.decode);
  }

  private dropQueued(): void {
    this.queued = [];
    this.queuedEvents = 0;
  }

  private dropFirst(events: number): void {
    this.queued.shift();
    this.queuedEvents -= events;
  }

  /** Resolves on notify(), close() or after pollIntervalMs, whichever comes first. */
  private waitForEvents(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.wake = undefined;
        resolve();
      };
      this.wake = finish;
      this.timer = setTimeout(finish, this.options.pollIntervalMs);
      this.timer.unref();
    });
  }

  private reportError(error: unknown): void {
    try {
      this.options.onError(error);
    } catch {
      // An onError that throws must not turn into an unhandled rejection of the loop.
    }
  }
}
