import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isMainThread, Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';

/**
 * WAL frames not yet copied into the database file after which the checkpointer copies the WAL of
 * a file whose commits are synced (synchronous=FULL: the event store, the idempotency records):
 * 10,000 pages, about 40 MB, instead of SQLite's 1,000.
 *
 * A checkpoint copies each page once however many commits rewrote it since the last one, and
 * fsyncs the WAL and the database file. Under load every apply rewrites a few random index pages
 * (a stream's revisions, a voucher's usage history), so a ten times longer interval copies far
 * fewer pages per apply and fsyncs the database file ten times less often: 13% less CPU per
 * request and 20% more requests per second when checkpoints ran on the committing thread; 20,000
 * pages gave no more, and a WAL that is never checkpointed is slower again (reads look a page up in
 * every 4,096-frame part of the WAL index). Decision 007.
 */
export const WAL_CHECKPOINT_PAGES = 10_000;

/**
 * The same for a file whose commits are not synced (synchronous=NORMAL: the read models, the
 * snapshots, the webhook deliveries): 1,000 pages, about 4 MB. Nothing of such a WAL is on the disk
 * until its checkpoint syncs it, so a checkpoint writes all of it at once, then the pages it
 * copied; at 10,000 pages that was 40 MB and more in 80 to 110 ms, and the event store's commit,
 * whose fsync waits for the same disk, waited as long (decision 069).
 */
export const UNSYNCED_WAL_CHECKPOINT_PAGES = 1_000;

/** The checkpoint interval of a file at this durability (see the two constants above). */
export const walCheckpointPages = (synchronous: 'FULL' | 'NORMAL'): number =>
  synchronous === 'FULL' ? WAL_CHECKPOINT_PAGES : UNSYNCED_WAL_CHECKPOINT_PAGES;

/**
 * WAL frames after which the checkpointer makes the WAL start again from its beginning (a RESTART
 * checkpoint, see the checkpointer's source): 20,000 frames, about 80 MB, for every file. A RESTART
 * holds the file's commits back while it copies what was committed during the PASSIVE checkpoint
 * before it and syncs the database file; what the PASSIVE checkpoints copied is synced just before,
 * without holding commits (decision 109), so the hold is a few milliseconds. A file copied every
 * UNSYNCED_WAL_CHECKPOINT_PAGES is restarted
 * at this same length, twenty of its intervals, so that its RESTARTs, each holding back the writer
 * thread that folds the read models, stay rare (decision 105).
 */
export const WAL_RESTART_FRAMES = 20_000;

/**
 * The longest a RESTART checkpoint waits for the writer's lock and for readers still on the WAL
 * before it gives up until the next check. Once it holds the writer's lock, commits wait for it:
 * for the copy of what the PASSIVE checkpoint left and for those readers (milliseconds here).
 */
export const WAL_RESTART_WAIT_MS = 250;

/** How often the checkpointer looks at each watched file's WAL (a read of 100 bytes of its -shm file). */
export const WAL_CHECK_INTERVAL_MS = 100;

/** A file whose WAL took no commit for this long is idle: its WAL is copied and truncated to zero bytes. */
export const WAL_IDLE_MS = 1_000;

/**
 * The main thread's connections never checkpoint (`wal_autocheckpoint=0`): a checkpoint of tens of
 * megabytes and its fsyncs would stall the thread that commits, and every request with it. A
 * worker thread of its own (started on first use, not keeping the process alive) holds one more
 * connection to each watched file, reads every WAL_CHECK_INTERVAL_MS how many WAL frames are not
 * yet copied (from the WAL-index header in the -shm file, https://www.sqlite.org/walformat.html:
 * `mxFrame` at byte 16, `nBackfill` at byte 96, in the host's byte order), and once the file's
 * checkpoint interval (`walCheckpointPages`) are, runs `PRAGMA wal_checkpoint(PASSIVE)`: it copies
 * what no reader still needs and never waits for, nor blocks, a writer or a reader; if commits went
 * on meanwhile, the rest is copied at the next check. Once a checkpoint has copied the whole WAL,
 * the next commit writes it again from its start, so the WAL stays about one interval long. Under
 * commits that never pause that moment never comes: once the WAL holds WAL_RESTART_FRAMES, the
 * database file is synced (SQLite syncs it only after a checkpoint that reached the WAL's end) and a
 * RESTART checkpoint holds commits back while it copies the rest, and the WAL starts again from its
 * beginning (decisions 060, 105 and 109). A file idle
 * for WAL_IDLE_MS gets a PASSIVE checkpoint and, once its WAL is fully copied, a `TRUNCATE` one
 * (which gives up at once if a writer holds the lock): the WAL file shrinks to zero bytes.
 *
 * A checkpoint only copies committed pages; what a commit made durable (its fsync of the WAL, at
 * synchronous=FULL) stays so whichever connection checkpoints. Closing the last connection to a
 * file checkpoints it completely (SQLite's own behaviour).
 */
export const WAL_AUTOCHECKPOINT_PAGES = 0;

/**
 * Connections opened on other threads (the projector thread) keep SQLite's automatic checkpoint
 * at the file's checkpoint interval: such a checkpoint stalls that thread only, not the event loop.
 * Every file they write is opened by the main thread too, whose checkpointer then usually copies it
 * first: one checkpointer per process.
 */
export const workerThreadAutocheckpointPages = walCheckpointPages;

/** The checkpointer thread's module (CommonJS, evaluated as the worker's source). */
export const CHECKPOINTER_SOURCE = `
const fs = require('node:fs');
try {
  fs.writeFileSync('/proc/thread-self/comm', 'wal-checkpoint'); // its name in top -H (Linux; see threadIdentity.ts)
} catch {}
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const littleEndian = require('node:os').endianness() === 'LE';
const header = Buffer.alloc(100);
/** { frames, uncopied } from the WAL-index header, or undefined when it cannot be read. */
const walState = (watched) => {
  try {
    watched.shm ??= fs.openSync(watched.file + '-shm', 'r');
    if (fs.readSync(watched.shm, header, 0, 100, 0) < 100) return undefined;
    const at = (offset) => (littleEndian ? header.readUInt32LE(offset) : header.readUInt32BE(offset));
    return { frames: at(16), uncopied: Math.max(0, at(16) - at(96)) };
  } catch {
    return undefined;
  }
};
const passive = (watched) => {
  const result = watched.db.pragma('wal_checkpoint(PASSIVE)')[0];
  // commits went on while it copied: copy the rest at the next check, so that the WAL is soon
  // copied whole and the next commit starts it again from its start
  watched.partial = result.busy !== 0 || result.checkpointed < result.log;
  return result;
};
// Under steady commits a PASSIVE checkpoint never finds the WAL wholly copied at a commit's
// start, so the WAL is never written again from its start and grows without end. Once it is this
// long, a RESTART checkpoint holds new commits back (for at most restartWaitMs) while it copies
// what the PASSIVE one left and readers move to the database file; the next commit then writes
// the WAL from its start.
const restart = (watched) => {
  watched.db.pragma('busy_timeout = ' + workerData.restartWaitMs);
  try {
    watched.db.pragma('wal_checkpoint(RESTART)');
  } finally {
    watched.db.pragma('busy_timeout = 0');
  }
};
// SQLite syncs the database file at the end of a checkpoint only if it copied the WAL to its end,
// which under steady commits a PASSIVE one never does: what the PASSIVE checkpoints copied since
// the last RESTART is still unsynced when the next RESTART comes, and the RESTART's own sync,
// made while it holds commits back, would flush it all. Synced here first, with no lock held, the
// RESTART's sync flushes only what the RESTART copies.
const syncCopied = (watched) => {
  watched.fd ??= fs.openSync(watched.file, 'r');
  fs.fdatasyncSync(watched.fd);
};
const files = new Map();
// A busy lock is expected (another connection writes, a reader holds the WAL): the next check tries
// again. Any other error is told to the opening thread, at most once per file every reportEveryMs.
// The busy test is isSqliteBusy's (this source runs in its own thread and cannot import it).
const report = (watched, error) => {
  const code = typeof error?.code === 'string' ? error.code : undefined;
  if (code?.startsWith('SQLITE_BUSY')) return;
  const now = Date.now();
  if (watched.reported !== undefined && now - watched.reported < workerData.reportEveryMs) return;
  watched.reported = now;
  parentPort.postMessage({ type: 'failed', file: watched.file, code, message: String(error?.message ?? error) });
};
const check = (watched, now) => {
  const state = walState(watched);
  if (state === undefined) {
    // no WAL index to read: copy on time instead
    if (now - watched.changed >= workerData.idleMs) { passive(watched); watched.changed = now; }
    return;
  }
  if (state.frames !== watched.frames) {
    watched.frames = state.frames;
    watched.changed = now;
  }
  if (state.uncopied >= watched.pages || (watched.partial && state.uncopied > 0)) {
    passive(watched);
    if (state.frames >= workerData.restartFrames) {
      syncCopied(watched);
      restart(watched);
    }
  }
  else if (state.frames > 0 && now - watched.changed >= workerData.idleMs) {
    const result = passive(watched);
    if (result.busy === 0 && result.checkpointed === result.log) watched.db.pragma('wal_checkpoint(TRUNCATE)');
  }
};
parentPort.on('message', ({ type, file, pages }) => {
  if (type === 'watch') {
    const known = files.get(file);
    if (known) { known.pages = Math.min(known.pages, pages); return; }
    try {
      const db = new Database(file, { fileMustExist: true, timeout: 0 });
      files.set(file, { file, pages, db, shm: undefined, fd: undefined, frames: -1, changed: Date.now(), partial: false, reported: undefined });
    } catch {
      // the file is gone already: nothing to checkpoint
    }
  } else if (type === 'unwatch') {
    const watched = files.get(file);
    files.delete(file);
    try {
      if (watched?.shm !== undefined) fs.closeSync(watched.shm);
      if (watched?.fd !== undefined) fs.closeSync(watched.fd);
      watched?.db.close();
    } catch { /* its directory was removed */ }
  } else if (type === 'sync') {
    parentPort.postMessage({ type: 'synced' });
  } else if (type === 'checkpoint') {
    for (const watched of files.values()) {
      try { passive(watched); } catch { /* busy or gone */ }
    }
    parentPort.postMessage({ type: 'checkpointed' });
  }
});
setInterval(() => {
  const now = Date.now();
  for (const watched of files.values()) {
    try {
      check(watched, now);
    } catch (error) {
      // the next check tries again
      report(watched, error);
    }
  }
}, workerData.intervalMs);
`;

/** How long after its thread ended the checkpointer starts another. */
export const CHECKPOINTER_RESTART_MS = 1_000;

export interface CheckpointerOptions {
  /** The thread's source (default CHECKPOINTER_SOURCE). */
  source?: string;
  /** How long after its thread ended another is started (default CHECKPOINTER_RESTART_MS). */
  restartDelayMs?: number;
  /** The least time between two reports of a file's failed checks (default CHECKPOINT_REPORT_EVERY_MS). */
  reportEveryMs?: number;
}

/** A watched file's check that failed with an error other than a busy lock. */
export interface CheckFailure {
  file: string;
  /** SQLite's code (`SQLITE_IOERR_WRITE`, `SQLITE_FULL`, …) or Node's (`ENOSPC`), when the error has one. */
  code: string | undefined;
  message: string;
}

/**
 * The least time between two reports of one file's failed checks: a file whose checkpoints keep
 * failing (a full disk) is reported once a minute, not ten times a second.
 */
export const CHECKPOINT_REPORT_EVERY_MS = 60_000;

/**
 * The checkpointer of one thread's connections (the main thread's: `checkpointer` below). Its
 * thread's work is caught per file and check: a check that failed other than on a busy lock goes
 * to `onCheckFailure` (at most once a minute per file), and the next check tries again. The thread
 * ends only on an error outside that (its source, its memory); then the error goes to `onFailure`
 * and another thread starts CHECKPOINTER_RESTART_MS later, watching the same files. Either way a
 * WAL that is no longer copied, and grows without bound, does not go unnoticed (decision 044).
 */
export class Checkpointer {
  private worker: Worker | undefined;
  /** Connections of this thread per watched file, and the file's checkpoint interval. */
  private readonly watched = new Map<string, { count: number; pages: number }>();
  private readonly waiting: Array<() => void> = [];
  private readonly source: string;
  private readonly restartDelayMs: number;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly reportEveryMs: number;
  /** Told when the thread failed, with how long until another starts (the service logs it). */
  onFailure: ((error: Error, restartInMs: number) => void) | undefined;
  /** Told when a file's check failed other than on a busy lock, at most every `reportEveryMs` per file (the service logs it). */
  onCheckFailure: ((failure: CheckFailure) => void) | undefined;

  constructor(options: CheckpointerOptions = {}) {
    this.source = options.source ?? CHECKPOINTER_SOURCE;
    this.restartDelayMs = options.restartDelayMs ?? CHECKPOINTER_RESTART_MS;
    this.reportEveryMs = options.reportEveryMs ?? CHECKPOINT_REPORT_EVERY_MS;
  }

  /**
   * One more connection of this thread to `file`, whose commits want a checkpoint every `pages`
   * frames. A file opened at two durabilities (the key-value store's two connections) is copied at
   * the shorter interval: its WAL holds unsynced frames.
   */
  watch(file: string, pages: number): void {
    const known = this.watched.get(file);
    if (known === undefined) this.watched.set(file, { count: 1, pages });
    else {
      known.count += 1;
      if (pages >= known.pages) return;
      known.pages = pages;
    }
    this.post({ type: 'watch', file, pages });
  }

  unwatch(file: string): void {
    const known = this.watched.get(file);
    if (known === undefined) return;
    if (known.count > 1) known.count -= 1;
    else {
      this.watched.delete(file);
      this.post({ type: 'unwatch', file });
    }
  }

  /** Runs one checkpoint of every watched file now; resolves when it is done (tests, diagnostics). */
  checkpointNow(): Promise<void> {
    return this.ask('checkpoint');
  }

  /**
   * Resolves once the thread has handled everything posted before: the connections of files no
   * longer watched are closed, and the last of them has copied its file's WAL and removed it. A
   * service awaits it after closing its stores, so that its files no longer change once it stopped.
   */
  settled(): Promise<void> {
    return this.worker ? this.ask('sync') : Promise.resolve();
  }

  /** Posts a message the thread answers, and resolves on its answer (answers come in order). */
  private ask(type: 'checkpoint' | 'sync'): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.post({ type });
      this.worker?.ref(); // awaited: keeps the process alive until it is answered
    });
  }

  private post(message: { type: 'watch' | 'unwatch' | 'checkpoint' | 'sync'; file?: string; pages?: number }): void {
    this.start().postMessage(message);
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const worker = new Worker(this.source, {
      eval: true,
      workerData: {
        sqlite,
        intervalMs: WAL_CHECK_INTERVAL_MS,
        idleMs: WAL_IDLE_MS,
        restartFrames: WAL_RESTART_FRAMES,
        restartWaitMs: WAL_RESTART_WAIT_MS,
        reportEveryMs: this.reportEveryMs,
      },
    });
    worker.on('message', (message: { type: string; file?: string; code?: string; message?: string }) => {
      if (message.type === 'failed') {
        this.onCheckFailure?.({ file: message.file!, code: message.code, message: message.message! });
        return;
      }
      this.waiting.shift()?.();
      if (this.waiting.length === 0) worker.unref();
    });
    worker.on('error', (error) => this.onFailure?.(error, this.restartDelayMs));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      for (const resolve of this.waiting.splice(0)) resolve();
      // nothing stops the thread but a failure (it dies with the process): another watches the files
      if (this.watched.size > 0 && this.restartTimer === undefined) {
        this.restartTimer = setTimeout(() => {
          this.restartTimer = undefined;
          if (this.watched.size > 0) this.start();
        }, this.restartDelayMs);
        this.restartTimer.unref();
      }
    });
    worker.unref(); // after the listeners: adding a 'message' listener refs the worker again
    this.worker = worker;
    for (const [file, { pages }] of this.watched) worker.postMessage({ type: 'watch', file, pages });
    return worker;
  }
}

/** The checkpointer of the main thread's connections (see WAL_AUTOCHECKPOINT_PAGES). */
export const checkpointer = new Checkpointer();

/**
 * The page cache of each connection, in KiB: 2 MB, SQLite's own default (better-sqlite3 is built
 * with 16 MB). An all-in-one process holds about forty connections (each environment's event, read,
 * analytics, key-value, snapshot and webhook files, from the main thread, the writer, projector,
 * webhook and checkpointer threads; 43 counted after a start), and once the files are larger than
 * their caches every cache can fill: at 16 MB each that is over 600 MB of the service's memory, at
 * 2 MB under 90 MB. The pages a request needs are
 * the few at the top of each index and the newest rows; the rest comes from the operating system's
 * file cache, which every connection shares (decision 064).
 */
export const PAGE_CACHE_KIB = 2_048;

const inCheckpointer = new WeakSet<Database.Database>();

/** Whether `error` is SQLite's SQLITE_BUSY or one of its extended codes (another connection's lock). */
export const isSqliteBusy = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
};

/** How long `enterWal` sleeps between two tries. */
const ENTER_WAL_RETRY_MS = 10;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switches the connection to write-ahead logging. Changing the journal mode needs the file to
 * itself, and SQLite answers SQLITE_BUSY at once, without the busy handler, when another connection
 * is writing it in rollback mode: that is the case when several threads open and set up the same
 * fresh file at a start (decision 087). The pragma is then tried again every ENTER_WAL_RETRY_MS, the
 * thread sleeping in between, until the connection's busy timeout has passed; any other error, or
 * the lock still held then, is thrown.
 */
export const enterWal = (db: Database.Database): void => {
  const deadline = performance.now() + Number(db.pragma('busy_timeout', { simple: true }));
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isSqliteBusy(error) || performance.now() >= deadline) throw error;
      Atomics.wait(sleeper, 0, 0, ENTER_WAL_RETRY_MS);
    }
  }
};

/**
 * Write-ahead logging with the given durability and a page cache of PAGE_CACHE_KIB; on the main
 * thread, checkpoints run on the checkpointer's thread, never on this connection (see above). Close the connection with `closeWal`.
 */
export const useWal = (db: Database.Database, synchronous: 'FULL' | 'NORMAL'): void => {
  enterWal(db);
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  db.pragma(
    `wal_autocheckpoint = ${isMainThread ? WAL_AUTOCHECKPOINT_PAGES : workerThreadAutocheckpointPages(synchronous)}`,
  );
  if (isMainThread && !db.memory && !inCheckpointer.has(db)) {
    inCheckpointer.add(db);
    checkpointer.watch(db.name, walCheckpointPages(synchronous));
  }
};

/** Closes a connection opened with `useWal` (the checkpointer stops watching its file when no connection of this thread has it open). */
export const closeWal = (db: Database.Database): void => {
  if (inCheckpointer.delete(db)) checkpointer.unwatch(db.name);
  if (db.open) db.close();
};

/**
 * Opens a database file (creating its directory if needed) with write-ahead logging at this
 * durability (`useWal`) and a busy timeout, and hands the connection to `setUp` (schema,
 * statements). If the setting up throws, the connection is closed again (`closeWal`) before the
 * error goes on, so a file that cannot be used leaves no connection and no checkpointer watch.
 */
export const openWithWal = <T>(
  filePath: string,
  synchronous: 'FULL' | 'NORMAL',
  busyTimeoutMs: number,
  setUp: (db: Database.Database) => T,
): T => {
  if (filePath !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(filePath)), { recursive: true });
  const db = new Database(filePath, { timeout: busyTimeoutMs });
  try {
    useWal(db, synchronous);
    return setUp(db);
  } catch (error) {
    closeWal(db);
    throw error;
  }
};
