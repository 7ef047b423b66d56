/**
 * Callers waiting for a projection checkpoint to reach a position (read-your-writes), each with a
 * timeout: resolved true once `reached` reports the position, false when the time is up or on
 * `releaseAll`. One entry per waiting request.
 */
interface Waiter {
  position: number;
  resolve(ok: boolean): void;
  timer: NodeJS.Timeout | undefined;
}

export class CheckpointWaiters {
  private waiting: Waiter[] = [];

  /** How many callers wait. */
  get size(): number {
    return this.waiting.length;
  }

  wait(position: number, timeoutMs: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { position, resolve, timer: undefined };
      waiter.timer = setTimeout(expire, timeoutMs, this, waiter);
      waiter.timer.unref();
      this.waiting.push(waiter);
    });
  }

  /** The checkpoint is at `position`: every waiter at or below it is answered true. */
  reached(position: number): void {
    if (this.waiting.length === 0) return;
    const still: Waiter[] = [];
    for (const waiter of this.waiting) {
      if (waiter.position > position) {
        still.push(waiter);
        continue;
      }
      clearTimeout(waiter.timer);
      waiter.resolve(true);
    }
    this.waiting = still;
  }

  /** Stopping: every waiter is answered false. */
  releaseAll(): void {
    for (const waiter of this.waiting.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.resolve(false);
    }
  }

  /** Drops one waiter (its time is up). */
  remove(waiter: Waiter): void {
    this.waiting = this.waiting.filter((w) => w !== waiter);
  }
}

function expire(waiters: CheckpointWaiters, waiter: Waiter): void {
  waiters.remove(waiter);
  waiter.resolve(false);
}
