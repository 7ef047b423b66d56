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
 * handed the rows of each of the main thread's commits (`committed()`; it reads the store itself
 * only to catch up or for other processes' commits), and reports each group's checkpoint as it
 * advances; `group(name)` gives the handle the use cases wait on for read-your-writes.
 *
 * If the thread dies, the failure is logged and a new one starts a second later from the
 * checkpoints in the read store (documents remember their last position, so nothing is applied
 * twice); writes meanwhile wait for their read models as long as they would for a slow projector.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';
import { CheckpointWaiters } from '../../core/checkpointWaiters.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';

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

export type ToProjectorThread = { type: 'committed'; committed: CommittedEvents } | { type: 'stop' };
export type FromProjectorThread =
  | { type: 'ready'; checkpoints: Record<string, number> }
  | { type: 'checkpoint'; group: string; position: number }
  | { type: 'failed'; message: string };

const WORKER_URL = new URL(
  `./projectorThread.worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
  import.meta.url,
);

/** Run from the .ts sources (development and tests, under tsx), the worker registers tsx's loader first. */
const spawn = (options: ProjectorThreadOptions): Worker =>
  WORKER_URL.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then((api) => { api.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`,
        { eval: true, workerData: options },
      )
    : new Worker(WORKER_URL, { workerData: options });

const RESTART_DELAY_MS = 1_000;

/** One projection group as the main thread sees it: the checkpoint the thread last reported. */
class GroupHandle implements ProjectorHandle {
  private position = 0;
  private readonly waiters = new CheckpointWaiters();

  constructor(private readonly thread: ProjectorThread) {}

  get checkpoint(): number {
    return this.position;
  }

  waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    if (position <= this.position) return Promise.resolve(true);
    return this.waiters.wait(position, timeoutMs);
  }

  /** Stops the whole thread (its groups stop together). */
  stop(): Promise<void> {
    return this.thread.stop();
  }

  advance(position: number): void {
    if (position <= this.position) return;
    this.position = position;
    this.waiters.reached(position);
  }

  release(): void {
    this.waiters.releaseAll();
  }
}

export class ProjectorThread {
  private worker!: Worker;
  private readonly groups = new Map<string, GroupHandle>();
  private stopping: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private running = false;

  private constructor(
    private readonly options: ProjectorThreadOptions,
    private readonly logger: Logger,
  ) {}

  /** Starts the thread; resolves once every group runs (older folds retired), with its checkpoint. */
  static async start(options: ProjectorThreadOptions, logger: Logger): Promise<ProjectorThread> {
    const thread = new ProjectorThread(options, logger);
    await thread.launch();
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
    if (!this.stopping && this.running)
      this.worker.postMessage({ type: 'committed', committed } satisfies ToProjectorThread);
  }

  /** Stops the groups (waiting for a batch being written) and the thread. */
  stop(): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      clearTimeout(this.restartTimer);
      for (const handle of this.groups.values()) handle.release();
      if (!this.running) {
        resolve();
        return;
      } // died, restart pending: nothing to stop
      this.worker.once('exit', () => resolve());
      this.worker.postMessage({ type: 'stop' } satisfies ToProjectorThread);
    });
    return this.stopping;
  }

  private handle(name: string): GroupHandle {
    let handle = this.groups.get(name);
    if (!handle) this.groups.set(name, (handle = new GroupHandle(this)));
    return handle;
  }

  private launch(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let started = false;
      const worker = spawn(this.options);
      this.worker = worker;
      this.running = true;
      worker.on('message', (message: FromProjectorThread) => {
        switch (message.type) {
          case 'ready':
            for (const [name, position] of Object.entries(message.checkpoints)) this.handle(name).advance(position);
            started = true;
            resolve();
            break;
          case 'checkpoint': // also before `ready`: a group catching up starts at once
            this.handle(message.group).advance(message.position);
            break;
          case 'failed':
            if (!started) reject(new Error(`the projector thread could not start: ${message.message}`));
            break;
        }
      });
      worker.on('error', (error) => {
        this.logger.error({ err: error, environment: this.options.environment }, 'projector thread failed');
        if (!started) reject(error);
      });
      worker.on('exit', (code) => {
        this.running = false;
        if (this.stopping || !started) return;
        this.logger.error(
          { code, environment: this.options.environment },
          'projector thread ended; starting a new one',
        );
        this.restartTimer = setTimeout(() => {
          this.launch().catch((error: unknown) =>
            this.logger.error({ err: error }, 'projector thread could not be restarted'),
          );
        }, RESTART_DELAY_MS);
        this.restartTimer.unref();
      });
    });
  }
}
