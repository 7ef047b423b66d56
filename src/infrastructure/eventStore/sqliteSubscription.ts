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
 */
import type { BatchHandler, RecordedEvent, Subscription } from './eventStore.ts';

export interface SubscriptionSource {
  /** Events with position > after, in position order, at most maxCount. */
  readAfter(after: number, maxCount: number): RecordedEvent[];
}

export interface SqliteSubscriptionOptions {
  after: number;
  maxBatchSize: number;
  pollIntervalMs: number;
  onError: (error: unknown) => void;
  /** Called once the loop has ended (closed or failed). */
  onEnd: () => void;
}

export class SqliteSubscription implements Subscription {
  private checkpoint: number;
  private stopped = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly done: Promise<void>;

  constructor(
    private readonly source: SubscriptionSource,
    private readonly handler: BatchHandler,
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
        const batch = this.source.readAfter(this.checkpoint, this.options.maxBatchSize);
        if (batch.length === 0) {
          await this.waitForEvents();
          continue;
        }
        await this.handler(batch);
        this.checkpoint = batch[batch.length - 1].position;
      }
    } catch (error) {
      this.stopped = true;
      this.reportError(error);
    }
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
