/**
 * Projection groups on a worker thread of their own (the embedded service runs its analytics group
 * here): the main thread decides and appends, the projector thread folds the log into those read
 * models, as a separate projector process would in the production topology. On this 2-core
 * machine the analytics fold was the larger part of each apply's read-model work; here it runs
 * on the other core. (The core group stays on the main thread: a write's read-your-writes wait
 * would otherwise cross threads and cost a turn of the event loop; see composition.ts.)
 *
 * The thread has its own connections to the environment's event store and read store files
 * (SQLite WAL: the main thread keeps reading the read store while the thread writes it). It is
 * handed the rows of each of this process's commits: by the event store's writer thread on a port
 * (`openFeed()`; decision 085), or by the main thread (`committed()`) where the store commits on the
 * main thread. It reads the store itself only to catch up, for other processes' commits, or for
 * commits made while no port was in place. It publishes each group's checkpoint in shared memory
 * as it advances, and posts it only while the main thread has a caller waiting on that group
 * (decision 086): a message would otherwise wake the main thread once per batch for nobody.
 * `group(name)` gives the handle the use cases wait on for read-your-writes.
 *
 * If the thread dies, the failure is logged and a new one starts a second later from the
 * checkpoints in the read store (documents remember their last position, so nothing is applied
 * twice); writes meanwhile wait for their read models as long as they would for a slow projector.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';
import { CheckpointWaiters } from '../../core/checkpointWaiters.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';
import { SupervisedWorker, siblingWorkerUrl } from '../supervisedWorker.ts';

export interface ProjectorThreadOptions {
  environment: string;
  /** Names of the projection groups the thread runs (projections/index.ts). */
  groups: string[];
  eventsFile: string;
  readsFile: string;
  logLevel: string;
  /** How often the thread's subscriptions poll for commits nobody told it about (other processes). */
  pollIntervalMs: number;
}

/** What the thread starts with: the options, and where it publishes its checkpoints. */
export interface ProjectorThreadData extends ProjectorThreadOptions {
  /**
   * Per group, in the order of `groups`, two BigInt64 slots: the checkpoint the thread last wrote,
   * and 1 while the main thread wants each checkpoint posted.
   */
  published: SharedArrayBuffer;
}

/** The slots of group `index` in `published` (BigInt64Array indexes). */
export const publishedSlots = (index: number) => ({ checkpoint: 2 * index, wanted: 2 * index + 1 });

export type ToProjectorThread =
  | { type: 'committed'; committed: CommittedEvents }
  /** From now on commits also come on `port` (ForwardedCommit messages), replacing the one before. */
  | { type: 'feed'; port: MessagePort }
  | { type: 'stop' };
export type FromProjectorThread =
  | { type: 'ready'; checkpoints: Record<string, number> }
  | { type: 'checkpoint'; group: string; position: number }
  | { type: 'failed'; message: string };

const WORKER_URL = siblingWorkerUrl('projectorThread.worker', import.meta.url);

/**
 * One projection group as the main thread sees it: the checkpoint the thread published. While a
 * caller waits, the handle asks the thread to post each checkpoint (`wanted`), and after asking
 * reads the published one again: the thread writes its checkpoint before it reads `wanted`, so a
 * batch written meanwhile is seen one way or the other (sequentially consistent atomics).
 */
class GroupHandle implements ProjectorHandle {
  private position = 0;
  private readonly waiters = new CheckpointWaiters();
  private readonly slots: { checkpoint: number; wanted: number };

  constructor(
    private readonly thread: ProjectorThread,
    private readonly published: BigInt64Array,
    index: number,
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

  /** Stops the whole thread (its groups stop together). */
  stop(): Promise<void> {
    return this.thread.stop();
  }

  advance(position: number): void {
    if (position > this.position) {
      this.position = position;
      this.waiters.reached(position);
    }
    // nobody waits: no more posts (a waiter that timed out is seen at the next post)
    if (this.waiters.size === 0) Atomics.store(this.published, this.slots.wanted, 0n);
  }

  release(): void {
    this.waiters.releaseAll();
  }
}

export class ProjectorThread {
  private readonly groups = new Map<string, GroupHandle>();
  private readonly thread: SupervisedWorker<FromProjectorThread, ToProjectorThread>;
  private readonly published: BigInt64Array;
  private readonly names: string[];
  private started = false;
  private restarted: (() => void) | undefined;

  private constructor(options: ProjectorThreadOptions, logger: Logger) {
    const published = new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT * options.groups.length);
    this.published = new BigInt64Array(published);
    this.names = options.groups;
    const workerData: ProjectorThreadData = { ...options, published };
    this.thread = new SupervisedWorker<FromProjectorThread, ToProjectorThread>({
      url: WORKER_URL,
      workerData,
      name: 'projector thread',
      logger,
      onMessage: (message) => {
        switch (message.type) {
          case 'ready':
            for (const [name, position] of Object.entries(message.checkpoints)) this.handle(name).advance(position);
            if (this.started) this.restarted?.();
            this.started = true;
            break;
          case 'checkpoint': // posted while a caller waits
            this.handle(message.group).advance(message.position);
            break;
        }
      },
    });
  }

  /** Starts the thread; resolves once every group runs (older folds retired), with its checkpoint. */
  static async start(options: ProjectorThreadOptions, logger: Logger): Promise<ProjectorThread> {
    const thread = new ProjectorThread(options, logger);
    await thread.thread.start();
    return thread;
  }

  /** The handle of one projection group (by its name in projections/index.ts). */
  group(name: string): ProjectorHandle {
    const handle = this.groups.get(name);
    if (!handle) throw new Error(`the projector thread runs no group named ${name}`);
    return handle;
  }

  /**
   * The main thread committed these rows: they are handed over (strings, cheap to copy), so the
   * thread need not read them back from the file while the main thread writes it.
   */
  committed(committed: CommittedEvents): void {
    this.thread.post({ type: 'committed', committed });
  }

  /**
   * A port whose messages (ForwardedCommit) the thread takes as commits, for the event store's
   * writer thread to forward them on (WriterThread.forwardCommits); it replaces the one before.
   * Undefined when no thread runs to take it.
   */
  openFeed(): MessagePort | undefined {
    const { port1, port2 } = new MessageChannel();
    if (this.thread.post({ type: 'feed', port: port2 }, [port2])) return port1;
    port1.close();
    return undefined;
  }

  /** `listener` runs each time a new thread replaced one that ended, once it runs (a port fed to the old one is gone). */
  onRestart(listener: () => void): void {
    this.restarted = listener;
  }

  /** Stops the groups (waiting for a batch being written) and the thread. */
  stop(): Promise<void> {
    for (const handle of this.groups.values()) handle.release();
    return this.thread.stop({ type: 'stop' });
  }

  private handle(name: string): GroupHandle {
    let handle = this.groups.get(name);
    if (!handle) this.groups.set(name, (handle = new GroupHandle(this, this.published, this.names.indexOf(name))));
    return handle;
  }
}
