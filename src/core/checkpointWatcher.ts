import type { ProjectorHandle } from './projectionRunner.ts';
import type { ReadStore } from './readStore.ts';

/** First and longest pause between two reads of the checkpoint. */
const FIRST_PAUSE_MS = 2;
const LONGEST_PAUSE_MS = 100;

/**
 * A projection group run by another process, as the API needs it (read-your-writes): `waitFor`
 * reads the group's checkpoint from the read store until it reaches the position, pausing 2 ms,
 * then twice as long each time up to 100 ms, for at most `timeoutMs`.
 */
export class CheckpointWatcher implements ProjectorHandle {
  private position = 0;
  private stopped = false;

  constructor(
    private readonly reads: ReadStore,
    private readonly checkpointName: string,
  ) {}

  /** The last checkpoint read. */
  get checkpoint(): number {
    return this.position;
  }

  /** Reads the checkpoint once (so `checkpoint` starts where the group is). */
  async start(): Promise<this> {
    this.position = await this.reads.getCheckpoint(this.checkpointName);
    return this;
  }

  async waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    let pause = FIRST_PAUSE_MS;
    for (;;) {
      if (position <= this.position) return true;
      if (this.stopped) return false;
      this.position = Math.max(this.position, await this.reads.getCheckpoint(this.checkpointName));
      if (position <= this.position) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
      pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }
}
