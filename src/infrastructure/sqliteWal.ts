import { createRequire } from 'node:module';
import { isMainThread, Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { BACKGROUND_THREAD_NICE } from './threadPriority.ts';

/**
 * How often the checkpointer copies each watched file's WAL back into the database file.
 *
 * A checkpoint copies each page once however many commits rewrote it since the last one, and
 * fsyncs the WAL and the database file. Under load every apply rewrites a few random index pages
 * (a stream's revisions, a voucher's usage history), so checkpoints should be seconds of commits
 * apart: once a second is about 10,000 WAL frames at apply's maximum rate (the interval SQLite's
 * own automatic checkpoints were measured best at, decision 007) and fewer, smaller ones below it.
 */
export const WAL_CHECKPOINT_INTERVAL_MS = 1_000;

/**
 * The main thread's connections never checkpoint (`wal_autocheckpoint=0`): a checkpoint of tens of
 * megabytes and its fsyncs would stall the thread that commits, and every request with it. A
 * worker thread of its own (started on first use, not keeping the process alive, at a lower
 * scheduling priority than the event loop: threadPriority.ts) holds one more connection to each watched file and runs
 * `PRAGMA wal_checkpoint(PASSIVE)` on it every WAL_CHECKPOINT_INTERVAL_MS: PASSIVE copies what no
 * reader still needs and never waits for, nor blocks, a writer or a reader. Once a checkpoint has
 * copied the whole WAL, the next commit writes it again from its start, so the WAL stays as large
 * as about one interval of commits. When a file was idle for a whole interval and its WAL is fully
 * copied, a `TRUNCATE` checkpoint (which gives up at once if a writer holds the lock) shrinks the
 * WAL file to zero bytes.
 *
 * A checkpoint only copies committed pages; what a commit made durable (its fsync of the WAL, at
 * synchronous=FULL) stays so whichever connection checkpoints. Closing the last connection to a
 * file checkpoints it completely (SQLite's own behaviour).
 */
export const WAL_AUTOCHECKPOINT_PAGES = 0;

/**
 * Connections opened on other threads (the projector thread) keep SQLite's automatic checkpoint,
 * every 10,000 WAL frames, about 40 MB (SQLite's default of 1,000 copies each hot index page ten
 * times as often: decision 007): such a checkpoint stalls that thread only, not the event loop.
 * Every file they write is opened by the main thread too, whose checkpointer keeps its WAL far
 * smaller: one checkpointer per process.
 */
export const WORKER_THREAD_AUTOCHECKPOINT_PAGES = 10_000;

const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
try {
  // below the event loop (threadPriority.ts; Linux)
  const tid = Number(require('node:path').basename(require('node:fs').readlinkSync('/proc/thread-self')));
  require('node:os').setPriority(tid, workerData.nice);
} catch {
  // elsewhere: the default priority
}
const files = new Map();
parentPort.on('message', ({ type, file }) => {
  if (type === 'watch') {
    try {
      files.set(file, { db: new Database(file, { fileMustExist: true, timeout: 0 }), lastLog: -1 });
    } catch {
      // the file is gone already: nothing to checkpoint
    }
  } else if (type === 'unwatch') {
    const watched = files.get(file);
    files.delete(file);
    try { watched?.db.close(); } catch { /* closed with its directory removed */ }
  } else if (type === 'checkpoint') {
    tick();
    parentPort.postMessage({ type: 'checkpointed' });
  }
});
const tick = () => {
  for (const watched of files.values()) {
    try {
      const [result] = watched.db.pragma('wal_checkpoint(PASSIVE)');
      const idle = result.log === watched.lastLog;
      watched.lastLog = result.log;
      if (idle && result.log > 0 && result.checkpointed === result.log) {
        watched.db.pragma('wal_checkpoint(TRUNCATE)');
        watched.lastLog = 0;
      }
    } catch {
      // busy or gone: the next tick tries again
    }
  }
};
setInterval(tick, workerData.intervalMs);
`;

class Checkpointer {
  private worker: Worker | undefined;
  private readonly watched = new Map<string, number>();
  private readonly waiting: Array<() => void> = [];

  watch(file: string): void {
    const count = this.watched.get(file) ?? 0;
    this.watched.set(file, count + 1);
    if (count === 0) this.post({ type: 'watch', file });
  }

  unwatch(file: string): void {
    const count = this.watched.get(file) ?? 0;
    if (count > 1) this.watched.set(file, count - 1);
    else if (count === 1) {
      this.watched.delete(file);
      this.post({ type: 'unwatch', file });
    }
  }

  /** Runs one checkpoint of every watched file now; resolves when it is done (tests, diagnostics). */
  checkpointNow(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.post({ type: 'checkpoint' });
      this.worker?.ref(); // awaited: keeps the process alive until it is done
    });
  }

  private post(message: { type: 'watch' | 'unwatch' | 'checkpoint'; file?: string }): void {
    this.start().postMessage(message);
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(CHECKPOINTER_SOURCE, {
      eval: true,
      workerData: { sqlite, intervalMs: WAL_CHECKPOINT_INTERVAL_MS, nice: BACKGROUND_THREAD_NICE },
    });
    worker.on('message', () => {
      this.waiting.shift()?.();
      if (this.waiting.length === 0) worker.unref();
    });
    worker.on('error', () => undefined); // checkpoints then wait for the files' last close
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      for (const resolve of this.waiting.splice(0)) resolve();
    });
    worker.unref(); // after the listeners: adding a 'message' listener refs the worker again
    this.worker = worker;
    for (const file of this.watched.keys()) worker.postMessage({ type: 'watch', file });
    return worker;
  }
}

/** The checkpointer of the main thread's connections (see WAL_AUTOCHECKPOINT_PAGES). */
export const checkpointer = new Checkpointer();

const inCheckpointer = new WeakSet<Database.Database>();

/**
 * Write-ahead logging with the given durability; on the main thread, checkpoints run on the
 * checkpointer's thread, never on this connection (see above). Close the connection with `closeWal`.
 */
export const useWal = (db: Database.Database, synchronous: 'FULL' | 'NORMAL'): void => {
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma(`wal_autocheckpoint = ${isMainThread ? WAL_AUTOCHECKPOINT_PAGES : WORKER_THREAD_AUTOCHECKPOINT_PAGES}`);
  if (isMainThread && !db.memory && !inCheckpointer.has(db)) {
    inCheckpointer.add(db);
    checkpointer.watch(db.name);
  }
};

/** Closes a connection opened with `useWal` (the checkpointer stops watching its file when no connection of this thread has it open). */
export const closeWal = (db: Database.Database): void => {
  if (inCheckpointer.delete(db)) checkpointer.unwatch(db.name);
  if (db.open) db.close();
};
