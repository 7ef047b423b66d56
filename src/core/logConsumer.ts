import type { DomainEvent } from './decider.ts';
import type { BatchHandler, EventStore, Subscription } from './eventStore.ts';
import { CheckpointWaiters } from './checkpointWaiters.ts';

export interface ConsumerLogger {
  error(obj: object, msg: string): void;
}

/** How long a consumer whose batch failed waits before it reads its checkpoint again and resubscribes. */
export const RESTART_DELAY_MS = 1_000;

export interface LogConsumerOptions<E extends DomainEvent> {
  /** Where the events come from: a catch-up subscription after a position. */
  events: Pick<EventStore<E>, 'subscribeToAll'>;
  /** Events per batch handed to `handle`. */
  maxBatchSize: number;
  /**
   * Reads the consumer's stored checkpoint (and whatever state it keeps beside it): at start,
   * and again after a failed batch, before the consumer resubscribes from there.
   */
  load(): Promise<number>;
  /** Handles one batch; calls `advance` once the batch is durable. */
  handle: BatchHandler<E>;
  /** Logged with the error of a failed batch (what failed, e.g. `projection failed`). */
  failure: string;
  /** Fields logged with a failure (e.g. the checkpoint's name). */
  context?: object;
  logger?: ConsumerLogger;
  /** Called with each new position (after the waiters are answered). */
  onAdvance?: (position: number) => void;
  /** See SubscribeOptions.onlyTypes: the event types `handle` needs for now, or undefined for all. */
  onlyTypes?: () => readonly string[] | undefined;
}

/**
 * The lifecycle of a consumer of the event log with a checkpoint of its own (a projection group,
 * the webhook publisher): the position it has reached, callers waiting for a position
 * (read-your-writes), the catch-up subscription from the checkpoint, and recovery: a failed
 * batch is logged, and after RESTART_DELAY_MS the consumer reloads its checkpoint and subscribes
 * again from there.
 */
export class LogConsumer<E extends DomainEvent> {
  private position = 0;
  private subscription?: Subscription;
  private readonly waiters = new CheckpointWaiters();
  private restartTimer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly options: LogConsumerOptions<E>) {}

  /** The last position handled. */
  get checkpoint(): number {
    return this.position;
  }

  /** Loads the checkpoint and subscribes after it. */
  async start(): Promise<void> {
    this.position = await this.options.load();
    this.subscribe();
  }

  /** Resolves true once the consumer has handled `position`, false after `timeoutMs` or on stop. */
  waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    if (position <= this.position) return Promise.resolve(true);
    return this.waiters.wait(position, timeoutMs);
  }

  /** The consumer has handled everything up to `position`. */
  advance(position: number): void {
    this.position = position;
    this.options.onAdvance?.(position);
    this.waiters.reached(position);
  }

  /** Closes the subscription (after the batch being handled) and answers every waiter false. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.subscription?.close();
    this.waiters.releaseAll();
  }

  private subscribe(): void {
    if (this.stopped) return;
    this.subscription = this.options.events.subscribeToAll(
      {
        after: this.position,
        maxBatchSize: this.options.maxBatchSize,
        onError: (error) => this.recover(error),
        ...(this.options.onlyTypes ? { onlyTypes: this.options.onlyTypes } : {}),
      },
      this.options.handle,
    );
  }

  private recover(error: unknown): void {
    this.options.logger?.error(
      { err: error, ...this.options.context },
      `${this.options.failure}; retrying from its checkpoint`,
    );
    if (this.stopped) return;
    this.restartTimer = setTimeout(() => {
      void this.options.load().then(
        (position) => {
          this.position = position;
          this.subscribe();
        },
        (e: unknown) => this.recover(e),
      );
    }, RESTART_DELAY_MS);
    this.restartTimer.unref();
  }
}
