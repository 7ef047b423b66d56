import type { Clock } from '../../domain/clock.ts';

/** The request thread's load above which it counts as saturated (its event loop busy 80 % of the time). */
export const BUSY_ABOVE = 0.8;
/** How long the publisher sleeps before it looks at the load again. */
export const PACE_STEP_MS = 25;
/** The share of time the request thread waits for a CPU above which the CPUs count as contended. */
export const WAITING_ABOVE = 0.02;
/** How long the webhook thread rests at a time while the request thread is saturated and waits for a CPU. */
export const BREATH_MS = 8;
/** How often the webhook thread asks whether to rest: after at least this long at work. */
export const BREATHE_EVERY_MS = 2;

export interface PacerOptions {
  /** The service's request thread's load now, from 0 (idle) to 1 (always running or waiting for a CPU). */
  load: () => number;
  /** The share of the recent time the request thread was ready to run and waited for a CPU, from 0 to 1. */
  waiting?: () => number;
  /** Blocks the calling thread for `ms`, leaving its CPU idle (the webhook thread: `Atomics.wait`). */
  block?: (ms: number) => void;
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
 * is done in turns (`breathe`, decision 102). A request waiting for the publisher to reach a
 * position (`hurry`, after an endpoint change) and a stop are never held back.
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

  /**
   * Called by the webhook thread between its callbacks, at most every BREATHE_EVERY_MS: while the
   * request thread is saturated (its load above BUSY_ABOVE) and waits for a CPU (more than
   * WAITING_ABOVE of the time), blocks the thread for BREATH_MS, so that the CPU it ran on goes
   * idle and the kernel moves a thread that waits onto it (decision 102). Never while a request
   * waits for the publisher at `checkpoint` to move on, nor once stopped. Returns the milliseconds
   * it blocked.
   */
  breathe(checkpoint: number): number {
    if (this.hurryTo > checkpoint || !this.contended()) return 0;
    this.options.block!(BREATH_MS);
    return BREATH_MS;
  }

  /**
   * Whether the request thread is saturated and waits for a CPU now, so that the webhook thread
   * should rest between its callbacks; never once stopped, nor without a wait to read or a way to block.
   */
  contended(): boolean {
    const { load, waiting, block } = this.options;
    return !this.stopped && !!waiting && !!block && load() > BUSY_ABOVE && waiting() > WAITING_ABOVE;
  }

  /**
   * Makes the calling thread rest in turns (decision 102): every `lookEveryMs` it looks whether
   * `working()` (an endpoint is enabled) and the request thread is contended; while both hold, a
   * timer calls `breathe` every BREATHE_EVERY_MS, so that an idle thread is not woken that often.
   * The timers keep no process alive. Returns the function that ends it.
   */
  restInTurns(working: () => boolean, checkpoint: () => number, lookEveryMs: number): () => void {
    let turns: ReturnType<typeof setInterval> | undefined;
    const quiet = () => {
      clearInterval(turns);
      turns = undefined;
    };
    const look = setInterval(() => {
      if (!working() || !this.contended()) quiet();
      else if (!turns) {
        turns = setInterval(() => this.breathe(checkpoint()), BREATHE_EVERY_MS);
        turns.unref();
      }
    }, lookEveryMs);
    look.unref();
    return () => {
      clearInterval(look);
      quiet();
    };
  }
}
