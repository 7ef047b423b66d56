/**
 * The snapshot writer thread: the SQLite snapshot stores' saves (a voucher's core and the entries
 * its last events changed, one transaction) are written by a worker thread
 * (snapshotWriterThread.worker.ts) on a connection of its own per snapshots file, so that the
 * B-tree inserts, the page reads of a growing file and the waits for a WAL restart's lock do not
 * run on the event loop (decision 093).
 *
 * - One thread serves every store of the process; it starts when the first store opens (so that
 *   no save waits for it to load) and keeps the process alive only while it owes answers.
 * - It runs at nice SNAPSHOT_WRITER_NICE: when the two cores are short, the threads that answer
 *   requests and commit appends run first, and the saves wait (the voucher's cached entry holds
 *   what they carry until they are written).
 * - A save's promise settles once the thread answered: resolved with whether it wrote (the stored
 *   snapshot was still at `base`), rejected with the thread's error (rebuilt by wireError.ts), after the COMMIT returned.
 * - The thread takes the saves in the order they were posted; the saves of one store are written
 *   one after the other on its connection, so the base check sees every earlier save.
 * - A thread that ends (an exception, terminated) rejects the saves it had not answered: snapshots
 *   are derived data, the caller drops its cached aggregate and the next load folds from the last
 *   snapshot written. The next save starts a new thread.
 * - `close()` waits for the store's answers, then closes its connection on the thread.
 */
import type { Worker } from 'node:worker_threads';
import { siblingWorkerUrl, spawnWorker } from '../supervisedWorker.ts';
import { fromWireError, type WireError } from '../wireError.ts';

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

/** A message to the thread without its `seq`: `id` names the store. */
type Request = { type: 'save'; id: number; file: string; save: SerializedSave } | { type: 'close'; id: number };

/** `seq` numbers the message: its answer comes back with it. */
export type ToSnapshotWriter = Request & { seq: number };

export type FromSnapshotWriter =
  | { type: 'saved'; seq: number; written: boolean }
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
  resolve(written: boolean): void;
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

  /** Posts a message and answers its promise with the thread's answer. */
  post(message: Request): Promise<boolean> {
    const worker = this.start();
    const seq = this.nextSeq++;
    return new Promise<boolean>((resolve, reject) => {
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
      else waiting?.resolve(message.type === 'saved' && message.written);
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

/** One snapshots file's side of the thread: its saves and their answers. */
export class SnapshotWriter {
  private readonly id = host.register();
  private readonly unanswered = new Set<Promise<unknown>>();

  constructor(private readonly file: string) {
    host.start();
  }

  /** Writes the snapshot on the thread; resolves with whether it wrote. */
  save(save: SerializedSave): Promise<boolean> {
    const answer = host.post({ type: 'save', id: this.id, file: this.file, save });
    this.track(answer);
    return answer;
  }

  /** Waits for every save's answer, then closes this file's connection on the thread (if it has one). */
  async close(): Promise<void> {
    while (this.unanswered.size > 0) await Promise.allSettled([...this.unanswered]);
    try {
      await host.post({ type: 'close', id: this.id });
    } catch {
      // the thread ended: it holds no connection any more
    }
  }

  private track(answer: Promise<unknown>): void {
    const settled: Promise<unknown> = answer.then(
      () => this.unanswered.delete(settled),
      () => this.unanswered.delete(settled),
    );
    this.unanswered.add(settled);
  }
}
