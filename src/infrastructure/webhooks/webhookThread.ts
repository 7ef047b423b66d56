/**
 * An environment's webhook publisher and dispatcher on a worker thread of their own (decision
 * 032): the main thread decides, appends and answers; the webhook thread reads the log from the
 * publisher's checkpoint, writes the deliveries, makes the attempts over HTTP and records them, on
 * its own connections to the environment's event store and webhooks store. On a saturated
 * service its work lags (it runs at a lower scheduling priority where the platform allows) and
 * catches up after, instead of taking the main thread's time.
 *
 * The main thread hands it the rows of each commit (`committed()`), keeps a connection to the
 * webhooks store of its own for reading deliveries, and sends the API's changes to deliveries
 * (resend, recover, test event, purge) as messages (`call`): they are made on the thread, one
 * at a time with the dispatcher's own changes. The thread asks the main thread to disable an
 * endpoint (410 Gone, 5 days of failures): that is an event appended through the endpoint's
 * command handler.
 *
 * If the thread dies, the failure is logged, calls waiting on it fail, and a new thread starts a
 * second later from the publisher's checkpoint and the stored deliveries (nothing is lost: the
 * deliveries and the checkpoint are written together; attempts not recorded are made again with
 * the same webhook-id).
 */
import type { ResourceLimits, Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';
import { changesEndpoint } from '../../domain/webhooks/events.ts';
import { CheckpointWaiters } from '../../core/checkpointWaiters.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';
import { SupervisedWorker, siblingWorkerUrl } from '../supervisedWorker.ts';
import type { BusSettings } from '../bus/createBus.ts';

export interface WebhookThreadOptions {
  environment: string;
  eventsFile: string;
  webhooksFile: string;
  /** The environment's voucher snapshots (snapshots.db), which the publisher reads to fold a voucher it does not hold; unset: none are kept. */
  snapshotsFile?: string;
  /** The operator's webhook settings (WebhookSettings), with the allowed CIDRs as text (`10.0.0.0/8,::1/128`). */
  settings: { allowedCidrs: string; retryDelaysMs: number[]; timeoutMs: number; maxDeferMs?: number };
  /** The main thread's load (mainThreadLoad): the publisher holds batches back, and the thread rests in turns, while it is saturated; unset: never. */
  mainThreadLoad?: SharedArrayBuffer;
  /** `user-agent: voucher-service-webhooks/<version>` */
  version: string;
  logLevel: string;
  /** How often the thread's subscription polls for commits nobody told it about (other processes). */
  pollIntervalMs: number;
  /**
   * Whether the thread puts itself in Linux's idle scheduling class (decision 100); `nice` is its
   * priority where it cannot, or when this is false.
   */
  idle: boolean;
  /** Scheduling priority (nice value) the thread gives itself on Linux; 0 leaves it as the process's. */
  nice: number;
  /** The Kafka bus the publisher produces to and the dispatcher consumes from (KAFKA_*); unset: none. */
  kafka?: BusSettings;
}

/** A change to deliveries the API asks of the thread: the name of a DeliveryControl method and its arguments. */
export interface ControlCall {
  op: string;
  args: unknown[];
}

export type ToWebhookThread =
  | { type: 'committed'; committed: CommittedEvents }
  | { type: 'call'; id: number; call: ControlCall }
  | { type: 'disabled'; id: number; error?: string }
  | { type: 'hurry'; position: number }
  | { type: 'stop' };

export type FromWebhookThread =
  | { type: 'ready'; checkpoint: number; resourceLimits: ResourceLimits }
  | { type: 'checkpoint'; position: number }
  | { type: 'subscribers'; subscribed: boolean }
  | { type: 'result'; id: number; value?: unknown; error?: string }
  | { type: 'disable'; id: number; endpointId: string; reason: string }
  | { type: 'failed'; message: string };

const WORKER_URL = siblingWorkerUrl('webhookThread.worker', import.meta.url);

/**
 * The webhook thread's V8 limits: a young generation of up to 32 MB instead of the other worker
 * threads' 4 MB (WORKER_RESOURCE_LIMITS). Under a backlog the thread keeps hundreds of attempts,
 * their bodies and a batch of up to 500 events alive across scavenges; with 4 MB much of that is
 * copied into the old generation and collected there (decision 096). V8 grows the young
 * generation only while the thread allocates steadily, and without an enabled endpoint the
 * publisher decodes only the endpoint events (decision 095), so such a thread stays small.
 */
export const WEBHOOK_THREAD_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 32 } as const;

export class WebhookThread implements ProjectorHandle {
  private position = 0;
  private readonly waiters = new CheckpointWaiters();
  private readonly calls = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 1;
  private readonly thread: SupervisedWorker<FromWebhookThread, ToWebhookThread>;
  /** The V8 limits the running thread reported when it started. */
  resourceLimits: ResourceLimits = {};
  /** Whether the publisher has an enabled endpoint, as the thread last said (true until it says). */
  private subscribed = true;

  private constructor(
    options: WebhookThreadOptions,
    private readonly disable: (endpointId: string, reason: string) => Promise<void>,
    logger: Logger,
  ) {
    this.thread = new SupervisedWorker<FromWebhookThread, ToWebhookThread>({
      url: WORKER_URL,
      workerData: options,
      name: 'webhook thread',
      logger,
      resourceLimits: WEBHOOK_THREAD_RESOURCE_LIMITS,
      onMessage: (message, worker) => this.receive(message, worker),
      onExit: () => {
        this.subscribed = true; // until the next thread says otherwise
        for (const pending of this.calls.values()) pending.reject(new Error('the webhook thread ended'));
        this.calls.clear();
      },
    });
  }

  /** Starts the thread; resolves once its publisher runs, with its checkpoint. */
  static async start(
    options: WebhookThreadOptions,
    disable: (endpointId: string, reason: string) => Promise<void>,
    logger: Logger,
  ): Promise<WebhookThread> {
    const thread = new WebhookThread(options, disable, logger);
    await thread.thread.start();
    return thread;
  }

  /** The publisher's checkpoint, as the thread last reported it. */
  get checkpoint(): number {
    return this.position;
  }

  waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    if (position <= this.position) return Promise.resolve(true);
    this.thread.post({ type: 'hurry', position }); // a request waits: the publisher does not hold it back
    return this.waiters.wait(position, timeoutMs);
  }

  /**
   * The main thread committed these rows: they are handed over, so the thread need not poll for
   * them. While no endpoint is enabled, only commits that change an endpoint are: the others make
   * no delivery, and the thread reads them from the store (its poll, or the gap before the next
   * commit handed over) instead of being woken for each (decision 082).
   */
  committed(committed: CommittedEvents): void {
    if (!this.subscribed && !committed.rows.some((row) => changesEndpoint(row.type, row.stream_id))) return;
    this.thread.post({ type: 'committed', committed });
  }

  /** Stops the publisher (after the batch being written) and the dispatcher, then the thread. */
  stop(): Promise<void> {
    this.waiters.releaseAll();
    return this.thread.stop({ type: 'stop' });
  }

  /** Runs a change to deliveries on the thread (one of its DeliveryControl's methods); resolves with its result. */
  call(op: string, ...args: unknown[]): Promise<unknown> {
    if (!this.thread.available)
      return Promise.reject(new Error('webhook delivery is not running (its thread is stopped or restarting)'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.thread.post({ type: 'call', id, call: { op, args } });
    });
  }

  private receive(message: FromWebhookThread, worker: Worker): void {
    switch (message.type) {
      case 'ready':
        this.resourceLimits = message.resourceLimits;
        this.advance(message.checkpoint);
        break;
      case 'checkpoint':
        this.advance(message.position);
        break;
      case 'subscribers':
        this.subscribed = message.subscribed;
        break;
      case 'result': {
        const pending = this.calls.get(message.id);
        this.calls.delete(message.id);
        if (message.error === undefined) pending?.resolve(message.value ?? null);
        else pending?.reject(new Error(message.error));
        break;
      }
      case 'disable':
        void this.disable(message.endpointId, message.reason).then(
          () => worker.postMessage({ type: 'disabled', id: message.id } satisfies ToWebhookThread),
          (error: unknown) =>
            worker.postMessage({
              type: 'disabled',
              id: message.id,
              error: error instanceof Error ? error.message : String(error),
            } satisfies ToWebhookThread),
        );
        break;
    }
  }

  private advance(position: number): void {
    if (position <= this.position) return;
    this.position = position;
    this.waiters.reached(position);
  }
}
