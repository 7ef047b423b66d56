/**
 * Worker threads of the service: starting one from the .ts sources or the compiled .js, and
 * keeping one running (the projector thread, the webhook thread).
 */
import { Worker, type MessagePort, type ResourceLimits } from 'node:worker_threads';
import type { Logger } from 'pino';

/**
 * The V8 limits of the worker threads spawned here (the event store's writer, the projector
 * thread; the webhook thread has limits of its own, decision 096): a young generation of at most
 * 4 MB instead of V8's default (48 MB on a 64-bit machine), which such a thread otherwise grows
 * to under steady allocation and keeps. About 35–40 MB less RSS for the service, no throughput
 * lost (decision 077).
 */
export const WORKER_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 4 } as const;

/**
 * Starts the worker module at `url` (the sibling of the calling module, `.ts` or `.js` as it is
 * itself), with `resourceLimits` (default WORKER_RESOURCE_LIMITS): run from the .ts sources
 * (development and tests, under tsx), the worker registers tsx's loader first.
 */
export const spawnWorker = (
  url: URL,
  workerData: unknown,
  resourceLimits: ResourceLimits = WORKER_RESOURCE_LIMITS,
): Worker =>
  url.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then((api) => { api.register(); return import(${JSON.stringify(url.href)}); })`,
        { eval: true, workerData, resourceLimits },
      )
    : new Worker(url, { workerData, resourceLimits });

/** `./<name>` next to the module at `moduleUrl`, with that module's extension (.ts or .js). */
export const siblingWorkerUrl = (name: string, moduleUrl: string): URL =>
  new URL(`./${name}${moduleUrl.endsWith('.ts') ? '.ts' : '.js'}`, moduleUrl);

const RESTART_DELAY_MS = 1_000;

export interface SupervisedWorkerOptions<From> {
  /** The worker module and its workerData. */
  url: URL;
  workerData: { environment: string };
  /** How logs and errors name the thread: `projector thread`, `webhook thread`. */
  name: string;
  /** Each message the thread sends, `ready` included (handled before start resolves), and the thread that sent it. */
  onMessage(message: From, worker: Worker): void;
  /** The thread ended (for whatever reason): what waits on it must not wait any longer. */
  onExit?(): void;
  logger: Logger;
  /** The thread's V8 limits; unset: WORKER_RESOURCE_LIMITS. */
  resourceLimits?: ResourceLimits;
}

/**
 * One worker thread kept running. The thread tells the main thread `{ type: 'ready', … }` once it
 * runs, or `{ type: 'failed', message }` when it could not start; its other messages are its own.
 * `start()` resolves once the thread says `ready` (rejects if it says `failed` or dies before); a thread that ends while not stopping is logged and replaced a
 * second later; `stop()` posts the stop message and resolves once the thread has exited.
 */
export class SupervisedWorker<From extends { type: string }, To> {
  private worker!: Worker;
  private stopping: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly options: SupervisedWorkerOptions<From>) {}

  /** Whether messages reach a thread: one runs and is not being stopped. */
  get available(): boolean {
    return this.stopping === undefined && this.running;
  }

  /** Posts to the running thread (moving `transfer`'s ports); false (nothing posted) when none runs or it is stopping. */
  post(message: To, transfer?: readonly MessagePort[]): boolean {
    if (!this.available) return false;
    this.worker.postMessage(message, transfer);
    return true;
  }

  /** Stops the thread (once): posts `stop`, resolves when it has exited (at once if none runs). */
  stop(stop: To): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      clearTimeout(this.restartTimer);
      if (!this.running) {
        resolve(); // died, restart pending: nothing to stop
        return;
      }
      this.worker.once('exit', () => resolve());
      this.worker.postMessage(stop);
    });
    return this.stopping;
  }

  start(): Promise<void> {
    const { name, logger, workerData } = this.options;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      const worker = spawnWorker(this.options.url, workerData, this.options.resourceLimits);
      this.worker = worker;
      this.running = true;
      worker.on('message', (message: From) => {
        if (message.type === 'failed') {
          const reason = 'message' in message ? String(message.message) : 'no reason given';
          if (!started) reject(new Error(`the ${name} could not start: ${reason}`));
          return;
        }
        this.options.onMessage(message, worker);
        if (message.type === 'ready') {
          started = true;
          resolve();
        }
      });
      worker.on('error', (error) => {
        logger.error({ err: error, environment: workerData.environment }, `${name} failed`);
        if (!started) reject(error);
      });
      worker.on('exit', (code) => {
        this.running = false;
        this.options.onExit?.();
        if (this.stopping || !started) return;
        logger.error({ code, environment: workerData.environment }, `${name} ended; starting a new one`);
        this.restartTimer = setTimeout(() => {
          this.start().catch((error: unknown) => logger.error({ err: error }, `${name} could not be restarted`));
        }, RESTART_DELAY_MS);
        this.restartTimer.unref();
      });
    });
  }
}
