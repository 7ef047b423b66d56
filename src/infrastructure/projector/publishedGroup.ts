import { CheckpointWaiters } from '../../core/checkpointWaiters.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';

/**
 * Checkpoints a worker thread publishes for the main thread (decision 086): per group, two
 * BigInt64 slots of a SharedArrayBuffer, the checkpoint the thread last wrote and 1 while the main
 * thread wants each checkpoint posted as a message too.
 */
export const publishedSlots = (index: number) => ({ checkpoint: 2 * index, wanted: 2 * index + 1 });

/** A SharedArrayBuffer with the slots of `groups` groups. */
export const publishedBuffer = (groups: number): SharedArrayBuffer =>
  new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT * groups);

/**
 * The thread's side: group `index` wrote a batch. Its checkpoint goes to shared memory first,
 * then `post` is called if the main thread wants it (the order makes a wait that starts meanwhile
 * see one or the other).
 */
export const publishCheckpoint = (
  published: BigInt64Array,
  index: number,
  position: number,
  post: (position: number) => void,
): void => {
  const slots = publishedSlots(index);
  Atomics.store(published, slots.checkpoint, BigInt(position));
  if (Atomics.load(published, slots.wanted) !== 0n) post(position);
};

/**
 * One projection group run by a worker thread, as the main thread sees it: the checkpoint the
 * thread published. While a caller waits, the handle asks the thread to post each checkpoint
 * (`wanted`), and after asking reads the published one again: the thread writes its checkpoint
 * before it reads `wanted`, so a batch written meanwhile is seen one way or the other
 * (sequentially consistent atomics). The thread's messages arrive through `advance`.
 */
export class PublishedGroup implements ProjectorHandle {
  private position = 0;
  private readonly waiters = new CheckpointWaiters();
  private readonly slots: { checkpoint: number; wanted: number };

  /** `stopRunner` stops what runs the group; `stop()` first answers the handle's waiters. */
  constructor(
    private readonly published: BigInt64Array,
    index: number,
    private readonly stopRunner: () => Promise<void>,
  ) {
    this.slots = publishedSlots(index);
  }

  get checkpoint(): number {
    this.advance(Number(Atomics.load(this.published, this.slots.checkpoint)));
    return this.position;
  }

  waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    if (position <= this.checkpoint) return Promise.resolve(true);
    const waiting = this.waiters.wait(position, timeoutMs);
    Atomics.store(this.published, this.slots.wanted, 1n);
    this.advance(Number(Atomics.load(this.published, this.slots.checkpoint)));
    return waiting;
  }

  stop(): Promise<void> {
    this.release();
    return this.stopRunner();
  }

  advance(position: number): void {
    if (position > this.position) {
      this.position = position;
      this.waiters.reached(position);
    }
    // nobody waits: no more posts (a waiter that timed out is seen at the next post)
    if (this.waiters.size === 0) Atomics.store(this.published, this.slots.wanted, 0n);
  }

  /** Answers every waiter false (the runner stops). */
  release(): void {
    this.waiters.releaseAll();
  }
}
