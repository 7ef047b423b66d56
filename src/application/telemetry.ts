import type { EnvironmentEvent } from './events.ts';
import { isoSeconds, type Clock } from '../domain/clock.ts';
import { telemetryStream, type OrderAttempt } from '../domain/analytics/events.ts';
import type { EventStore } from '../core/eventStore.ts';

export interface TelemetryOptions {
  /** Flush when this many attempts are buffered. */
  maxBatch?: number;
  /** Flush at least this often (wall clock) while attempts are buffered. */
  intervalMs?: number;
  onError?: (error: unknown) => void;
}

/**
 * Order attempts (validations) for conversion figures, kept outside the voucher aggregate: a
 * validate only pushes onto an in-memory buffer, and a flush (every `intervalMs`, or at
 * `maxBatch` attempts, and on close) appends the whole buffer as ONE `OrderAttemptsRecorded`
 * event on `telemetry-<UTC day>` with expected revision `any`. Attempts buffered when the process
 * dies are lost (at most one interval's worth); applications never are, as they are voucher events.
 * A failed append is reported and dropped, never retried into an unbounded buffer.
 */
export class AttemptRecorder {
  private buffer: OrderAttempt[] = [];
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly maxBatch: number;
  private readonly intervalMs: number;

  constructor(
    private readonly events: EventStore<EnvironmentEvent>,
    private readonly clock: Clock,
    private readonly options: TelemetryOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 1_000;
    this.intervalMs = options.intervalMs ?? 1_000;
  }

  /** Records one attempt of the voucher (synchronous: validate never waits for telemetry). */
  record(voucherId: string, orderId: string | undefined, segment: string | undefined): void {
    this.buffer.push({
      voucherId,
      ...(orderId !== undefined ? { orderId } : {}),
      ...(segment !== undefined ? { segment } : {}),
      at: isoSeconds(this.clock.now()),
    });
    if (this.buffer.length >= this.maxBatch) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.intervalMs);
      this.timer.unref();
    }
  }

  /** Appends what is buffered (one event); resolves once it is durable. Flushes run one at a time. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing = this.flushing.then(async () => {
      if (this.buffer.length === 0) return;
      const attempts = this.buffer;
      this.buffer = [];
      const recordedAt = isoSeconds(this.clock.now());
      try {
        await this.events.appendToStream(
          telemetryStream(recordedAt.slice(0, 10)),
          [{ type: 'OrderAttemptsRecorded', data: { attempts, recordedAt } }],
          { expectedRevision: 'any' },
        );
      } catch (error) {
        this.options.onError?.(error);
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
  }
}
