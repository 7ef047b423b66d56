/**
 * The SQLite event stores' writer thread: appends are committed by a worker thread
 * (sqliteWriterThread.worker.ts) on a connection of its own per store, so the event loop keeps
 * serving while a batch is written and its WAL fsynced (synchronous=FULL). The opening thread's
 * connection only reads. One writer thread serves every store the thread opens (started at the
 * first append of any and kept from then on; it keeps the process alive only while it owes answers).
 *
 * - Batching: the appends of one event-loop turn are posted as one message; the thread takes
 *   every message already waiting into one group-commit transaction per store
 *   (sqliteGroupCommit.ts), so while one batch is synced the next gathers.
 * - An append's promise settles once the thread answered, i.e. after its COMMIT returned; the
 *   thread's connection is at synchronous=FULL, so its rows are visible to other connections only
 *   once durable.
 * - Errors cross the thread as data (wireError.ts): a failed expected-revision check is rebuilt as
 *   WrongExpectedRevisionError, an SQLite error as better-sqlite3's SqliteError with its `code`.
 * - A thread that ends before answering (an exception, terminated) rejects every append it had
 *   with WriterThreadEnded (whether it was written is unknown: a later append with an expected
 *   revision tells); the next append starts a new thread. Nothing waits for an answer that cannot come.
 * - A store's connection on the thread is opened at its first append (a store that only reads,
 *   as on the projector thread, opens none) and closed by `close()`, which first waits for every
 *   answer.
 *
 * Change token (EventStore.externalChangeToken: the same while no OTHER connection commits). The
 * opening connection's `PRAGMA data_version` changes on every commit of the writer too, so the
 * token is built from positions instead (events are never deleted, and a commit that matters adds
 * events, above every position before it). Three numbers are shared through a SharedArrayBuffer:
 * - `HEAD`, the highest head position accounted for: the thread stores there the head its
 *   transaction leads to right BEFORE its COMMIT, so its own rows are never above it;
 * - `FOREIGN`, the token: foreign commits counted;
 * - `LOOKED_AT`, when (process.hrtime, ns) the thread began to read the head, under the write lock
 *   at a transaction's start, for the last read it has accounted.
 * A head found above `HEAD` is a foreign commit: whoever finds it first raises `HEAD` to it
 * (compare-and-swap) and counts it, so each is counted once. The opening thread settles the token
 * once per turn (`token`): if the thread's last accounted read began at most `freshMs` ago, every
 * commit visible before then is counted already, and nothing is read; otherwise it reads its
 * data_version and, when that changed, the head. So own commits never change the token, and a
 * foreign commit changes it at the latest at the first turn `freshMs` after it is visible. Under
 * load the thread begins a transaction every millisecond or so and the opening connection reads
 * nothing: a read there would start a read transaction which, after each of the thread's commits,
 * empties the connection's page cache (docs/benchmark.md, "The change token off the main thread").
 */
import { type MessagePort, type Worker } from 'node:worker_threads';
import type { AppendResult } from '../../core/eventStore.ts';
import type { CommittedEvents, FlushInfo, PendingAppend, StreamPart } from './sqliteGroupCommit.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';
import { siblingWorkerUrl, spawnWorker } from '../supervisedWorker.ts';
import { PublishedGroup, publishedBuffer } from '../projector/publishedGroup.ts';
import { fromWireError, toWireError, type WireError } from '../wireError.ts';

/** Indexes in the shared BigInt64Array. */
export const HEAD = 0;
export const FOREIGN = 1;
export const LOOKED_AT = 2;

/** How recent the writer thread's last read of the head must be for a turn to read nothing (`freshMs`). */
export const DEFAULT_TOKEN_FRESH_MS = 2;

/** Counts a head found above `HEAD` as a foreign commit, once (see the change token above). */
export function accountHead(shared: BigInt64Array, head: number): void {
  const found = BigInt(head);
  for (let accounted = Atomics.load(shared, HEAD); found > accounted; accounted = Atomics.load(shared, HEAD)) {
    if (Atomics.compareExchange(shared, HEAD, accounted, found) === accounted) {
      Atomics.add(shared, FOREIGN, 1n);
      return;
    }
  }
}

/**
 * Projection groups the thread folds each of a store's commits into before it answers the commit
 * (decision 087; the thread's side is projector/threadGroups.ts).
 */
export interface WriterGroupsOptions {
  environment: string;
  /** Names of the groups (projections/index.ts). */
  groups: string[];
  /** The groups' read store file. */
  readsFile: string;
  logLevel: string;
  /** How often the groups' subscriptions look for other processes' commits. */
  pollIntervalMs: number;
}

/** The groups' options and where the thread publishes their checkpoints (publishedGroup.ts). */
export interface WriterGroupsOpen extends WriterGroupsOptions {
  published: SharedArrayBuffer;
}

/** How the thread opens a store's connection. */
export interface WriterOpen {
  file: string;
  busyTimeoutMs: number;
  /** The writer connection's wal_autocheckpoint: the opening thread's own (0 when the checkpointer thread copies the WAL). */
  walAutocheckpoint: number;
  /** HEAD and FOREIGN (see above). */
  shared: SharedArrayBuffer;
  /** Projection groups to run on the store's commits. */
  groups?: WriterGroupsOpen;
}

export type WireOutcome = { ok: true; results: AppendResult[] } | { ok: false; error: WireError };

/** `id` names the store. */
export type ToWriter =
  | ({ type: 'open'; id: number } & WriterOpen)
  | { type: 'append'; id: number; appends: StreamPart[][] }
  /**
   * From now on, each commit's rows of the store also go to `port` (replacing the one before), the
   * commits of `windowMs` after the first in one message (0: each at once).
   */
  | { type: 'forward'; id: number; port: MessagePort; windowMs: number }
  | { type: 'close'; id: number };

/** What the thread posts on a store's forward port: the commits that stored rows in one window, in order. */
export interface ForwardedCommits {
  type: 'committed';
  commits: CommittedEvents[];
}

export type FromWriter =
  | {
      /** One transaction's outcomes, in the order the appends were posted. */
      type: 'done';
      id: number;
      outcomes: WireOutcome[];
      info: FlushInfo;
      /** Present when the transaction committed. */
      committed?: CommittedEvents;
    }
  | { type: 'closed'; id: number }
  /** The store's projection groups started (or could not: `error`). */
  | { type: 'ready'; id: number; error?: WireError }
  /** A group of the store wrote a batch: posted only while the opening thread wants it (publishedGroup.ts). */
  | { type: 'checkpoint'; id: number; group: string; position: number };

/** The writer thread ended before it answered these appends. */
export class WriterThreadEnded extends Error {
  override readonly name = 'WriterThreadEnded';
  constructor(detail: string, cause?: unknown) {
    super(
      `the event store's writer thread ended (${detail}) before answering: the append may or may not have been written`,
      cause === undefined ? undefined : { cause },
    );
  }
}

const WORKER_URL = siblingWorkerUrl('sqliteWriterThread.worker', import.meta.url);

/** The writer thread of this thread's stores: starts it, routes its answers, sees it end. */
class WriterHost {
  private worker: Worker | undefined;
  private lastError: unknown;
  private readonly clients = new Map<number, WriterThread>();
  private readonly closeWaiters = new Map<number, () => void>();
  private nextId = 1;
  /** Appends posted and not answered, over all stores: the thread keeps the process alive while some are. */
  private unanswered = 0;

  register(client: WriterThread): number {
    const id = this.nextId++;
    this.clients.set(id, client);
    return id;
  }

  /** Starts the thread if none runs and opens the store's connection on it if not open yet. */
  open(id: number, open: WriterOpen): Worker {
    const worker = this.start();
    const client = this.clients.get(id)!;
    if (client.openedOn !== worker) {
      worker.postMessage({ type: 'open', id, ...open } satisfies ToWriter);
      client.openedOn = worker;
      client.postForwardPort();
    }
    return worker;
  }

  /** Posts a store's appends, opening its connection on the thread first if needed. */
  append(id: number, open: WriterOpen, appends: StreamPart[][]): void {
    const worker = this.open(id, open);
    this.unanswered += appends.length;
    worker.ref();
    worker.postMessage({ type: 'append', id, appends } satisfies ToWriter);
  }

  /** Closes the store's connection on the thread (at once if it has none) and forgets the store. */
  close(id: number): Promise<void> {
    const client = this.clients.get(id);
    this.clients.delete(id);
    const worker = this.worker;
    if (!client || !worker || client.openedOn !== worker) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.closeWaiters.set(id, resolve);
      worker.ref();
      worker.postMessage({ type: 'close', id } satisfies ToWriter);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker(WORKER_URL, {});
    worker.on('message', (message: FromWriter) => {
      if (message.type === 'closed') {
        this.closeWaiters.get(message.id)?.();
        this.closeWaiters.delete(message.id);
      } else if (message.type === 'done') {
        this.unanswered -= message.outcomes.length;
        this.clients.get(message.id)?.answer(message);
      } else if (message.type === 'ready') this.clients.get(message.id)?.groupsStarted(message.error);
      else this.clients.get(message.id)?.groupAdvanced(message.group, message.position);
      if (this.unanswered === 0 && this.closeWaiters.size === 0) worker.unref();
    });
    worker.on('error', (error) => {
      this.lastError = error;
    });
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.unanswered = 0;
      const error = new WriterThreadEnded(`exit code ${code}`, this.lastError);
      this.lastError = undefined;
      for (const client of this.clients.values()) client.ended(error);
      for (const resolve of this.closeWaiters.values()) resolve();
      this.closeWaiters.clear();
    });
    worker.unref(); // after the listeners: adding a 'message' listener refs the worker again
    this.worker = worker;
    return worker;
  }
}

const host = new WriterHost();

export interface WriterThreadOptions {
  file: string;
  busyTimeoutMs: number;
  walAutocheckpoint: number;
  /** The opening connection's `PRAGMA data_version` and head position (reads). */
  dataVersion(): number;
  headPosition(): number;
  /**
   * The change token's staleness bound while the thread writes: a turn reads neither of the above
   * if the thread read the head at most this long ago. Default DEFAULT_TOKEN_FRESH_MS.
   */
  freshMs?: number;
  /** Called with each committed transaction, before its appends' promises settle. */
  onCommitted(info: FlushInfo, committed: CommittedEvents): void;
  /** Projection groups the thread runs on this store's commits (see `group`). */
  groups?: WriterGroupsOptions;
}

/** One store's side of the writer thread: its appends, their answers and its change token. */
export class WriterThread {
  /** The thread on which this store's connection is open. */
  openedOn: Worker | undefined;
  private readonly id = host.register(this);
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(3 * BigInt64Array.BYTES_PER_ELEMENT));
  private readonly open: WriterOpen;
  /** Appends of this turn, not posted yet. */
  private queue: PendingAppend[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  /** Posted, not answered yet, in posting order (`answered` of them settled). */
  private posted: PendingAppend[] = [];
  private answered = 0;
  private idleWaiters: Array<() => void> = [];
  private lastVersion: number;
  /** `freshMs` in nanoseconds. */
  private readonly freshNs: bigint;
  /** Makes the port the thread forwards this store's commits to (see `forwardCommits`). */
  private feed: (() => MessagePort | undefined) | undefined;
  /** How long the thread gathers the commits it forwards before posting them (see `forwardCommits`). */
  private forwardWindowMs = 0;
  /** The handles of the groups the thread runs, by name. */
  private readonly groups = new Map<string, PublishedGroup>();
  /** Settles once a thread has started the groups. */
  private readonly started: Promise<void>;
  private settleStarted: ((error?: Error) => void) | undefined;

  constructor(private readonly options: WriterThreadOptions) {
    const { file, busyTimeoutMs, walAutocheckpoint, groups } = options;
    this.open = { file, busyTimeoutMs, walAutocheckpoint, shared: this.shared.buffer as SharedArrayBuffer };
    if (groups) {
      const published = publishedBuffer(groups.groups.length);
      this.open.groups = { ...groups, published };
      const slots = new BigInt64Array(published);
      // the groups stop when the store closes, after its last commit (`close`)
      groups.groups.forEach((name, index) => this.groups.set(name, new PublishedGroup(slots, index, async () => {})));
    }
    this.started = new Promise<void>((resolve, reject) => {
      this.settleStarted = (error) => (error ? reject(error) : resolve());
    });
    this.started.catch(() => undefined); // read by `group`
    if (!groups) this.settleStarted?.();
    Atomics.store(this.shared, HEAD, BigInt(options.headPosition()));
    this.lastVersion = options.dataVersion();
    this.freshNs = BigInt(Math.round((options.freshMs ?? DEFAULT_TOKEN_FRESH_MS) * 1e6));
  }

  /**
   * The handle of a projection group the thread runs (`groups`), once a thread has started it
   * (the thread is started if none runs); rejects if it could not start.
   */
  async group(name: string): Promise<ProjectorHandle> {
    const handle = this.groups.get(name);
    if (!handle) throw new Error(`the writer thread runs no group named ${name}`);
    this.start();
    // until it answers (`ready`, after which the host unrefs it), the thread keeps the process alive
    if (this.settleStarted) this.openedOn?.ref();
    await this.started;
    return handle;
  }

  /** The thread started this store's groups, or failed to (the error's SQLite code, if any, in the message). */
  groupsStarted(wire?: WireError): void {
    const cause = wire === undefined ? undefined : fromWireError(wire);
    const code = (cause as { code?: unknown } | undefined)?.code;
    this.settleStarted?.(
      cause === undefined
        ? undefined
        : new Error(
            `projection groups on the writer thread: ${cause.message}${typeof code === 'string' ? ` (${code})` : ''}`,
            { cause },
          ),
    );
    this.settleStarted = undefined;
  }

  /** A group wrote a batch (posted while a caller waits). */
  groupAdvanced(name: string, position: number): void {
    this.groups.get(name)?.advance(position);
  }

  /** Starts the thread and opens this store's connection on it now, rather than at the first append. */
  start(): void {
    host.open(this.id, this.open);
  }

  enqueue(append: PendingAppend): void {
    this.queue.push(append);
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Posts the appends gathered so far to the thread (started if none runs). */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    this.posted.push(...batch);
    host.append(
      this.id,
      this.open,
      batch.map((append) => append.parts),
    );
  }

  /**
   * From now on the thread also posts each commit's rows to a port that `feed` makes, gathered for
   * `windowMs` after the first commit of a window and posted as one `ForwardedCommits` (0: each
   * commit at once, right after its answer): another thread that reads them (the projector thread)
   * gets them without the opening thread posting them on, and wakes once per window, not once per
   * commit (decision 111). `feed` is called now, and again whenever a new writer thread opens this
   * store; undefined: nothing to forward to. Called again, it replaces the port and the feed (what
   * the old port's window held is posted on the old port before it closes). Commits made while no
   * port was in place, or held by a thread that died, are not forwarded: the receiver finds them in
   * the store.
   */
  forwardCommits(feed: () => MessagePort | undefined, windowMs = 0): void {
    this.feed = feed;
    this.forwardWindowMs = windowMs;
    this.postForwardPort(); // if no thread has opened this store yet, the one that does posts it (WriterHost.open)
  }

  /** Gives the thread this store is open on a new forward port from `feed`, if there are both. */
  postForwardPort(): void {
    if (!this.openedOn) return;
    const port = this.feed?.();
    if (port)
      this.openedOn.postMessage(
        { type: 'forward', id: this.id, port, windowMs: this.forwardWindowMs } satisfies ToWriter,
        [port],
      );
  }

  /**
   * Settles the token (see the change token above): reads the opening connection only if the
   * thread's last accounted read of the head began more than `freshMs` ago. Call it at most once
   * per turn.
   */
  token(): number {
    if (process.hrtime.bigint() - Atomics.load(this.shared, LOOKED_AT) > this.freshNs) {
      const version = this.options.dataVersion();
      if (version !== this.lastVersion) {
        this.lastVersion = version;
        accountHead(this.shared, this.options.headPosition());
      }
    }
    return Number(Atomics.load(this.shared, FOREIGN));
  }

  /** Posts what is queued, waits for every answer, then closes the store's connection on the thread. */
  async close(): Promise<void> {
    this.flush();
    if (this.posted.length > this.answered) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await host.close(this.id);
    for (const handle of this.groups.values()) handle.release();
  }

  /** One transaction's answer. */
  answer({ outcomes, info, committed }: Extract<FromWriter, { type: 'done' }>): void {
    if (committed) {
      try {
        this.options.onCommitted(info, committed);
      } catch {
        // An observer must never keep committed appends from resolving.
      }
    }
    const appends = this.posted;
    for (const outcome of outcomes) {
      const append = appends[this.answered++]!;
      if (outcome.ok) append.resolve(outcome.results);
      else append.reject(fromWireError(outcome.error));
    }
    if (this.answered === appends.length) this.idle();
  }

  /**
   * The thread ended: appends it did not answer are rejected (their outcome is unknown), and the
   * token changes (a commit it made but did not report must not leave a cache current).
   */
  ended(error: WriterThreadEnded): void {
    this.openedOn = undefined;
    this.groupsStarted(toWireError(error));
    for (const append of this.posted.slice(this.answered)) append.reject(error);
    Atomics.store(this.shared, HEAD, BigInt(this.options.headPosition()));
    Atomics.add(this.shared, FOREIGN, 1n);
    this.idle();
  }

  private idle(): void {
    this.posted = [];
    this.answered = 0;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
