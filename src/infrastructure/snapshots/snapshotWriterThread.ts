/**
 * The snapshot writer thread: the SQLite snapshot stores' saves (a voucher's core and the entries
 * its last events changed) are written by a worker thread (snapshotWriterThread.worker.ts) on a
 * connection of its own per snapshots file, so that the B-tree inserts, the page reads of a
 * growing file and the waits for a WAL restart's lock do not run on the event loop (decision 093).
 *
 * - One thread serves every store of the process; it starts when the first store opens (so that
 *   no save waits for it to load) and keeps the process alive only while it owes answers.
 * - It runs at nice SNAPSHOT_WRITER_NICE: when the two cores are short, the threads that answer
 *   requests and commit appends run first, and the saves wait (the voucher's cached entry holds
 *   what they carry until they are written).
 * - Each store gathers its saves for a window (`gatherMs`, SNAPSHOT_GATHER_MS; 0: each alone)
 *   after the first, and posts the window as one message; the thread writes the window's saves in
 *   one transaction, each in a savepoint of its own, and answers them in one message (decision
 *   112). Nothing waits on a save to answer a request: a window costs the thread one wake-up and
 *   one commit, and the main thread one answer, instead of one per save.
 * - A save's promise settles once the thread answered: resolved with whether it wrote (the stored
 *   snapshot was still at `base`), rejected with its error (rebuilt by wireError.ts), after the
 *   window's COMMIT returned. A save that fails rolls back its savepoint and rejects alone; a
 *   window whose transaction fails (it cannot begin or commit) rejects every save in it.
 * - The thread takes the windows in the order they were posted; the saves of one store are
 *   written one after the other on its connection, so the base check sees every earlier save.
 * - A thread that ends (an exception, terminated) rejects the saves it had not answered: snapshots
 *   are derived data, the caller drops its cached aggregate and the next load folds from the last
 *   snapshot written. The next window starts a new thread.
 * - `close()` posts the window held at once, waits for the store's answers, then closes its
 *   connection on the thread.
 */
import type { Worker } from 'node:worker_threads';
import { siblingWorkerUrl, spawnWorker } from '../supervisedWorker.ts';
import { fromWireError, type WireError } from '../wireError.ts';
import { WindowGatherer } from '../windowGatherer.ts';

/**
 * A snapshot as the write transaction takes it: the core and each entry's value as JSON, with
 * whether the key may be stored already (false: certainly not, per the saving store's filter of
 * stored keys, so the transaction inserts it without looking it up).
 */
export interface SerializedSave {
  stream: string;
  base: number;
  revision: number;
  core: string;
  entries: Array<[key: string, json: string, mayBeStored: boolean]>;
}

/**
 * The thread's scheduling priority (Linux): below the main thread's and the event store's writer
 * thread's, like the webhook threads' (decision 093).
 */
export const SNAPSHOT_WRITER_NICE = 10;

/** The service's window: a store posts the saves of 25 ms to the thread together (decision 112). */
export const DEFAULT_SNAPSHOT_GATHER_MS = 25;

/** A message to the thread without its `seq`: `id` names the store; `saves`, a window's, in order. */
type Request = { type: 'save'; id: number; file: string; saves: SerializedSave[] } | { type: 'close'; id: number };

/** `seq` numbers the message: its answer comes back with it. */
export type ToSnapshotWriter = Request & { seq: number };

/** What became of one save of a window: whether it wrote, or the error that rolled it back. */
export type SaveOutcome = { written: boolean } | { error: WireError };

export type FromSnapshotWriter =
  | { type: 'saved'; seq: number; outcomes: SaveOutcome[] }
  | { type: 'failed'; seq: number; error: WireError }
  | { type: 'closed'; seq: number };

/** The snapshot writer thread ended before it answered. */
export class SnapshotWriterEnded extends Error {
  override readonly name = 'SnapshotWriterEnded';
  constructor(detail: string, cause?: unknown) {
    super(
      `the snapshot writer thread ended (${detail}) before answering: the snapshot may or may not have been written`,
      cause === undefined ? undefined : { cause },
    );
  }
}

const WORKER_URL = siblingWorkerUrl('snapshotWriterThread.worker', import.meta.url);

interface Waiting {
  resolve(outcomes: SaveOutcome[]): void;
  reject(error: Error): void;
}

/** The thread: starts it, routes its answers, sees it end. */
class SnapshotWriterHost {
  private worker: Worker | undefined;
  private lastError: unknown;
  private nextId = 1;
  private nextSeq = 1;
  private readonly waiting = new Map<number, Waiting>();

  register(): number {
    return this.nextId++;
  }

  /** Posts a message and answers its promise with the thread's answer (a window's outcomes; none for a close). */
  post(message: Request): Promise<SaveOutcome[]> {
    const worker = this.start();
    const seq = this.nextSeq++;
    return new Promise<SaveOutcome[]>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...message, seq } satisfies ToSnapshotWriter);
    });
  }

  /** Ends the thread as if it had failed: its unanswered saves are rejected (tests). */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  /** Starts the thread if none runs. */
  start(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker(WORKER_URL, { nice: SNAPSHOT_WRITER_NICE });
    worker.on('message', (message: FromSnapshotWriter) => {
      const waiting = this.waiting.get(message.seq);
      this.waiting.delete(message.seq);
      if (message.type === 'failed') waiting?.reject(fromWireError(message.error));
      else waiting?.resolve(message.type === 'saved' ? message.outcomes : []);
      if (this.waiting.size === 0) worker.unref();
    });
    worker.on('error', (error) => {
      this.lastError = error;
    });
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const error = new SnapshotWriterEnded(`exit code ${code}`, this.lastError);
      this.lastError = undefined;
      const waiting = [...this.waiting.values()];
      this.waiting.clear();
      for (const w of waiting) w.reject(error);
    });
    worker.unref(); // after the listeners: adding a 'message' listener refs the worker again
    this.worker = worker;
    return worker;
  }
}

const host = new SnapshotWriterHost();

/** Ends the snapshot writer thread now, as a crash would (tests of what a save then does). */
export const terminateSnapshotWriter = (): Promise<void> => host.terminate();

/** A save held in a window, with its promise's ends. */
interface HeldSave {
  save: SerializedSave;
  resolve(written: boolean): void;
  reject(error: Error): void;
}

/** One snapshots file's side of the thread: its windows of saves and their answers. */
export class SnapshotWriter {
  private readonly id = host.register();
  private readonly unanswered = new Set<Promise<unknown>>();
  private readonly window: WindowGatherer<HeldSave>;

  constructor(
    private readonly file: string,
    gatherMs: number = DEFAULT_SNAPSHOT_GATHER_MS,
  ) {
    this.window = new WindowGatherer(gatherMs, (held) => this.post(held));
    host.start();
  }

  /** Writes the snapshot on the thread with the others of its window; resolves with whether it wrote. */
  save(save: SerializedSave): Promise<boolean> {
    const answer = new Promise<boolean>((resolve, reject) => this.window.take({ save, resolve, reject }));
    this.track(answer);
    return answer;
  }

  /** Posts the window held now, waits for every save's answer, then closes this file's connection on the thread (if it has one). */
  async close(): Promise<void> {
    this.window.flush();
    while (this.unanswered.size > 0) await Promise.allSettled([...this.unanswered]);
    try {
      await host.post({ type: 'close', id: this.id });
    } catch {
      // the thread ended: it holds no connection any more
    }
  }

  /** Posts a window and settles each of its saves with its outcome. */
  private post(held: HeldSave[]): void {
    host.post({ type: 'save', id: this.id, file: this.file, saves: held.map((h) => h.save) }).then(
      (outcomes) =>
        held.forEach((h, i) => {
          const outcome = outcomes[i]!; // one per save, in order
          if ('written' in outcome) h.resolve(outcome.written);
          else h.reject(fromWireError(outcome.error));
        }),
      (error: Error) => held.forEach((h) => h.reject(error)),
    );
  }

  private track(answer: Promise<unknown>): void {
    const settled: Promise<unknown> = answer.then(
      () => this.unanswered.delete(settled),
      () => this.unanswered.delete(settled),
    );
    this.unanswered.add(settled);
  }
}
