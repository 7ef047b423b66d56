import type { Clock } from '../../domain/clock.ts';

/** The request thread's load above which it counts as saturated (its event loop busy 80 % of the time). */
export const BUSY_ABOVE = 0.8;
/** How long the publisher sleeps before it looks at the load again. */
export const PACE_STEP_MS = 25;

export interface PacerOptions {
  /** The service's request thread's load now, from 0 (idle) to 1 (its event loop never waits). */
  load: () => number;
  /** The longest an event waits for its deliveries because of the load (WEBHOOK_MAX_DEFER_MS); 0: never. */
  maxDeferMs: number;
  clock: Clock;
  sleep?: (ms: number) => Promise<void>;
}

const sleepFor = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/**
 * Holds the webhook publisher's next batch back while the service's request thread is saturated
 * (decision 075): the batch waits, a step at a time, until the load falls to BUSY_ABOVE or below,
 * or until its oldest event is `maxDeferMs` old, whichever comes first. Under a burst of checkout
 * traffic the deliveries' work then comes after it, in larger batches, instead of taking CPU time
 * from the requests; under saturation that lasts longer, deliveries lag by `maxDeferMs` and the work
 * is done as before. A request waiting for the publisher to reach a position (`hurry`, after an
 * endpoint change) and a stop are never held back.
 */
export class Pacer {
  private hurryTo = 0;
  private stopped = false;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: PacerOptions) {
    this.sleep = options.sleep ?? sleepFor;
  }

  /** Someone waits for the publisher to reach `position`: batches up to it are not held back. */
  hurry(position: number): void {
    this.hurryTo = Math.max(this.hurryTo, position);
  }

  /** Ends every wait, now and later. */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Resolves when the batch whose oldest event was recorded at `oldestMs` may be handled by a
   * publisher at `checkpoint`; with the milliseconds it was held back.
   */
  async wait(oldestMs: number, checkpoint: number): Promise<number> {
    const { load, maxDeferMs, clock } = this.options;
    const started = clock.now().getTime();
    let now = started;
    while (!this.stopped && this.hurryTo <= checkpoint && now - oldestMs < maxDeferMs && load() > BUSY_ABOVE) {
      await this.sleep(Math.min(PACE_STEP_MS, oldestMs + maxDeferMs - now));
      now = clock.now().getTime();
    }
    return now - started;
  }
}
