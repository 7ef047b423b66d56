/**
 * Projection groups on a worker thread of their own (the embedded service runs its analytics group
 * here): the main thread decides and appends, the projector thread folds the log into those read
 * models, as a separate projector process would in the production topology. On this 2-core
 * machine the analytics fold was the larger part of each apply's read-model work; here it runs
 * on the other core. (The core group, whose read models a write's answer waits for, runs on the
 * event store's writer thread instead, before each commit is answered: threadGroups.ts.)
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
import type { ProjectorHandle } from '../../core/projectionRunner.ts';
import { SupervisedWorker, siblingWorkerUrl } from '../supervisedWorker.ts';
import { PublishedGroup, publishedBuffer } from './publishedGroup.ts';

/** The service's gather window: the analytics group folds the commits of 25 ms together (decisions 103, 111). */
export const DEFAULT_PROJECTOR_GATHER_MS = 25;

export interface ProjectorThreadOptions {
  environment: string;
  /** Names of the projection groups the thread runs (projections/index.ts). */
  groups: string[];
  eventsFile: string;
  readsFile: string;
  logLevel: string;
  /** How often the thread's subscriptions poll for commits nobody told it about (other processes). */
  pollIntervalMs: number;
  /**
   * How long the thread holds the commits the main thread hands it to fold them together
   * (windowGatherer.ts; 0: none). Commits the event store's writer thread forwards come gathered.
   */
  gatherMs: number;
}

/** What the thread starts with: the options, and where it publishes its checkpoints. */
export interface ProjectorThreadData extends ProjectorThreadOptions {
  /**
   * Per group, in the order of `groups`, two BigInt64 slots: the checkpoint the thread last wrote,
   * and 1 while the main thread wants each checkpoint posted.
   */
  published: SharedArrayBuffer;
}

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

export class ProjectorThread {
  private readonly groups = new Map<string, PublishedGroup>();
  private readonly thread: SupervisedWorker<FromProjectorThread, ToProjectorThread>;
  private readonly published: BigInt64Array;
  private readonly names: string[];
  private started = false;
  private restarted: (() => void) | undefined;

  private constructor(options: ProjectorThreadOptions, logger: Logger) {
    const published = publishedBuffer(options.groups.length);
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

  private handle(name: string): PublishedGroup {
    let handle = this.groups.get(name);
    if (!handle)
      this.groups.set(
        name,
        (handle = new PublishedGroup(this.published, this.names.indexOf(name), () => this.stop())), // the groups stop together
      );
    return handle;
  }
}
