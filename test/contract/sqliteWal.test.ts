/**
 * WAL checkpoints off the committing connections (src/infrastructure/sqliteWal.ts): the stores'
 * connections never checkpoint, the checkpointer's thread copies committed pages into the
 * database file, and what was acknowledged survives a SIGKILL before, during or after that.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import sinon from 'sinon';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteKvStore } from '../../src/infrastructure/kvStore/sqliteKvStore.ts';
import {
  type CheckFailure,
  Checkpointer,
  CHECKPOINTER_SOURCE,
  checkpointer,
  closeWal,
  enterWal,
  PAGE_CACHE_KIB,
  UNSYNCED_WAL_CHECKPOINT_PAGES,
  useWal,
  WAL_CHECKPOINT_PAGES,
  WAL_RESTART_FRAMES,
} from '../../src/infrastructure/sqliteWal.ts';
import { exitWithin, run, sleep } from '../support/processes.ts';

const clock = { now: () => new Date('2026-01-01T00:00:00Z') };
const pageCount = (file: string): number => {
  const db = new Database(file, { readonly: true });
  try {
    // Pages in the database file itself (not the WAL): what checkpoints have copied.
    return fs.statSync(file).size / (db.pragma('page_size', { simple: true }) as number);
  } finally {
    db.close();
  }
};

describe('SQLite WAL checkpoints off the committing connections', function () {
  let dir: string;

  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-wal-'));
  });

  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('every store commits with wal_autocheckpoint=0 and a page cache of PAGE_CACHE_KIB; the event store and idempotency records stay synchronous=FULL', async function () {
    const events = SqliteEventStore.open(path.join(dir, 'events.db'));
    const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
    const kv = SqliteKvStore.open(path.join(dir, 'state.db'), clock, { relaxedNamespaces: ['quotes'] });
    try {
      expect(events.pragmas()).to.include({ synchronous: 2, walAutocheckpoint: 0 });
      expect(kv.synchronousOf('idempotency')).to.equal(2);
      expect(kv.synchronousOf('quotes')).to.equal(1);
      const connections = [
        (reads as unknown as { db: Database.Database }).db,
        ...(kv as unknown as { connections: Database.Database[] }).connections,
      ];
      expect(connections.map((db) => db.pragma('wal_autocheckpoint', { simple: true }))).to.deep.equal([0, 0, 0]);
      // every connection's page cache is PAGE_CACHE_KIB (better-sqlite3's build would give 16 MB)
      const eventsDb = (events as unknown as { db: Database.Database }).db;
      expect([eventsDb, ...connections].map((db) => db.pragma('cache_size', { simple: true }))).to.deep.equal(
        Array(4).fill(-PAGE_CACHE_KIB),
      );
    } finally {
      await Promise.all([events.close(), reads.close(), kv.close()]);
    }
  });

  it('the checkpointer copies committed events into the database file, and every one reads back', async function () {
    const file = path.join(dir, 'events.db');
    const store = SqliteEventStore.open(file);
    try {
      await Promise.all(
        Array.from({ length: 2_000 }, (_, i) =>
          store.appendToStream(`s-${i % 100}`, [{ type: 'Written', data: { n: i, pad: 'x'.repeat(200) } }]),
        ),
      );
      const before = pageCount(file);
      await checkpointer.checkpointNow();
      expect(pageCount(file)).to.be.greaterThan(before + 50);
      expect(await store.headPosition()).to.equal(2_000);
    } finally {
      await store.close();
    }
    const reopened = SqliteEventStore.open(file);
    try {
      const all = await reopened.readAll({ maxCount: 5_000 });
      expect(all.map((e) => (e.data as { n: number }).n).sort((a, b) => a - b)).to.deep.equal(
        Array.from({ length: 2_000 }, (_, i) => i),
      );
    } finally {
      await reopened.close();
    }
  });

  for (const synchronous of ['FULL', 'NORMAL'] as const)
    it(`under commits that never stop, the WAL of a file at synchronous=${synchronous} is written again from its start once it reaches WAL_RESTART_FRAMES: its file stops growing`, async function () {
      this.timeout(120_000);
      const file = path.join(dir, `busy-${synchronous}.db`);
      const db = new Database(file);
      useWal(db, synchronous);
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)');
      const insert = db.prepare('INSERT OR REPLACE INTO blobs (id, body) VALUES (?, ?)');
      const body = Buffer.alloc(64 * pageSize, 7); // 64 pages a commit, rows rewritten in a ring
      const restartBytes = WAL_RESTART_FRAMES * pageSize;
      try {
        // Commits one after the other, yielding to the event loop between them (the checkpointer is a
        // thread of its own): six times as many bytes as the WAL may hold before it is written again
        // from its start. Without the RESTART the WAL file grows by all of them (6×); with it, it
        // stays under 3× on a quiet machine, and 4× leaves room for a checkpointer thread that the
        // rest of a CI machine kept off the CPUs for a while (3.03× seen once).
        let largest = 0;
        for (let written = 0, i = 0; written < 6 * restartBytes; written += body.length, i += 1) {
          insert.run(i % 256, body);
          if (i % 4 === 0) await sleep(1);
          largest = Math.max(largest, fs.statSync(`${file}-wal`).size);
        }
        expect(largest).to.be.below(4 * restartBytes);
      } finally {
        closeWal(db);
      }
    });

  it('a file whose commits are not synced is copied every UNSYNCED_WAL_CHECKPOINT_PAGES frames, a synced one not before WAL_CHECKPOINT_PAGES, one opened at both at the shorter', async function () {
    this.timeout(60_000);
    const open = (name: string, synchronous: 'FULL' | 'NORMAL') => {
      const db = new Database(path.join(dir, name));
      useWal(db, synchronous);
      db.exec('CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, body BLOB)');
      return { db, file: path.join(dir, name), insert: db.prepare('INSERT INTO blobs (body) VALUES (?)') };
    };
    const unsynced = open('unsynced.db', 'NORMAL');
    const synced = open('synced.db', 'FULL');
    // the key-value store's case: a synced connection and an unsynced one to the same file; the
    // commits here go through the synced one, but the file's WAL may hold unsynced frames
    const mixed = open('mixed.db', 'FULL');
    const mixedUnsynced = open('mixed.db', 'NORMAL');
    const files = [unsynced, synced, mixed];
    const pageSize = unsynced.db.pragma('page_size', { simple: true }) as number;
    const body = Buffer.alloc(8 * pageSize, 7);
    const [unsyncedBefore, syncedBefore, mixedBefore] = files.map((f) => pageCount(f.file));
    try {
      // The files take commits every few ms (never idle for WAL_IDLE_MS), until the unsynced and
      // the mixed one have been copied: their WALs then held UNSYNCED_WAL_CHECKPOINT_PAGES, the
      // synced one's as many, far below WAL_CHECKPOINT_PAGES. Bounded: 1.5 × WAL_CHECKPOINT_PAGES
      // frames at most.
      expect(UNSYNCED_WAL_CHECKPOINT_PAGES * 3).to.be.below(WAL_CHECKPOINT_PAGES);
      let frames = 0;
      while (pageCount(unsynced.file) === unsyncedBefore || pageCount(mixed.file) === mixedBefore) {
        if (frames > 1.5 * WAL_CHECKPOINT_PAGES) throw new Error('the unsynced or the mixed file was never copied');
        for (const f of files) f.insert.run(body);
        frames += 9;
        await sleep(2);
      }
      expect(frames).to.be.below(2 * UNSYNCED_WAL_CHECKPOINT_PAGES + 1_000);
      expect(pageCount(synced.file)).to.equal(syncedBefore);
    } finally {
      for (const f of [...files, mixedUnsynced]) closeWal(f.db);
    }
  });

  it('once a file took no commit for a second, the checkpointer copies its WAL and truncates it to zero bytes', async function () {
    const file = path.join(dir, 'events.db');
    const store = SqliteEventStore.open(file);
    try {
      await Promise.all(
        Array.from({ length: 200 }, (_, i) => store.appendToStream(`s-${i % 10}`, [{ type: 'Written', data: { i } }])),
      );
      expect(fs.statSync(`${file}-wal`).size).to.be.greaterThan(0);
      const before = pageCount(file);
      // idle from now: WAL_IDLE_MS, then a check every WAL_CHECK_INTERVAL_MS (bounded wait, no timing asserted)
      for (let waited = 0; fs.statSync(`${file}-wal`).size > 0; waited += 100) {
        if (waited > 15_000) throw new Error('the WAL of an idle file was not truncated');
        await sleep(100);
      }
      expect(pageCount(file)).to.be.greaterThan(before);
      expect(await store.headPosition()).to.equal(200);
    } finally {
      await store.close();
    }
  });

  it('a checkpointer thread that fails is reported, and another starts and copies the files watched', async function () {
    const file = path.join(dir, 'watched.db');
    const failedOnce = path.join(dir, 'failed-once');
    // the first thread fails as it starts (with the file's watch posted to it), the next runs as usual
    const failing = `if (!require('node:fs').existsSync(${JSON.stringify(failedOnce)})) {
  require('node:fs').writeFileSync(${JSON.stringify(failedOnce)}, '');
  throw new Error('the first thread fails');
}
${CHECKPOINTER_SOURCE}`;
    const own = new Checkpointer({ source: failing, restartDelayMs: 50 });
    const failures: Array<{ message: string; restartInMs: number }> = [];
    own.onFailure = (error, restartInMs) => failures.push({ message: error.message, restartInMs });
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)');
    own.watch(file, WAL_CHECKPOINT_PAGES);
    try {
      const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
      for (let i = 0; i < 200; i++) insert.run('x'.repeat(500));
      expect(fs.statSync(`${file}-wal`).size).to.be.greaterThan(0);
      // nothing is posted to the checkpointer from here: only a thread started on its own can copy
      // the idle file's WAL and truncate it (WAL_IDLE_MS, then a check; bounded wait, no timing asserted)
      for (let waited = 0; fs.statSync(`${file}-wal`).size > 0; waited += 100) {
        if (waited > 15_000) throw new Error(`the WAL was not truncated; failures: ${JSON.stringify(failures)}`);
        await sleep(100);
      }
      expect(failures).to.deep.equal([{ message: 'the first thread fails', restartInMs: 50 }]);
      expect(db.prepare('SELECT count(*) AS n FROM rows').get()).to.deep.equal({ n: 200 });
    } finally {
      own.unwatch(file);
      await own.settled();
      db.close();
    }
  });

  it("a file's failed check is reported at most once per reportEveryMs, and a busy lock not at all", async function () {
    const failing = path.join(dir, 'failing.db');
    const busy = path.join(dir, 'busy.db');
    const thrown = path.join(dir, 'thrown');
    // Every checkpoint of failing.db throws an I/O error and every one of busy.db SQLITE_BUSY; each
    // throw is counted in a file, so the test knows how many checks have failed.
    const source = `{
  const fs = require('node:fs');
  const Database = require(require('node:worker_threads').workerData.sqlite);
  const pragma = Database.prototype.pragma;
  Database.prototype.pragma = function (text, options) {
    if (text.startsWith('wal_checkpoint')) {
      const code = this.name === ${JSON.stringify(failing)} ? 'SQLITE_IOERR_WRITE' : this.name === ${JSON.stringify(busy)} ? 'SQLITE_BUSY' : undefined;
      if (code) {
        fs.appendFileSync(${JSON.stringify(thrown)}, code + '\\n');
        throw Object.assign(new Error(code === 'SQLITE_BUSY' ? 'database is locked' : 'disk I/O error'), { code });
      }
    }
    return pragma.call(this, text, options);
  };
}
${CHECKPOINTER_SOURCE}`;
    const own = new Checkpointer({ source });
    const failures: CheckFailure[] = [];
    own.onCheckFailure = (failure) => failures.push(failure);
    const dbs = [failing, busy].map((file) => {
      const db = new Database(file);
      db.pragma('journal_mode = WAL');
      db.pragma('wal_autocheckpoint = 0');
      db.exec('CREATE TABLE rows (body TEXT)');
      db.prepare('INSERT INTO rows VALUES (?)').run('x');
      own.watch(file, WAL_CHECKPOINT_PAGES);
      return db;
    });
    const count = (code: string) =>
      fs.existsSync(thrown)
        ? fs
            .readFileSync(thrown, 'utf8')
            .split('\n')
            .filter((line) => line === code).length
        : 0;
    try {
      // once idle (WAL_IDLE_MS), each check of both files fails; wait for three of each (bounded, no timing asserted)
      for (let waited = 0; count('SQLITE_IOERR_WRITE') < 3 || count('SQLITE_BUSY') < 3; waited += 100) {
        if (waited > 15_000) throw new Error(`the checks did not fail as set up: ${count('SQLITE_IOERR_WRITE')}`);
        await sleep(100);
      }
      await own.settled(); // every report the thread posted so far has arrived
      expect(failures).to.deep.equal([{ file: failing, code: 'SQLITE_IOERR_WRITE', message: 'disk I/O error' }]);
    } finally {
      for (const file of [failing, busy]) own.unwatch(file);
      await own.settled();
      for (const db of dbs) db.close();
    }
  });

  it('acknowledged appends from before and after a background checkpoint survive a SIGKILL', async function () {
    const file = path.join(dir, 'events.db');
    const child = run(['test/contract/sqliteWal.main.ts'], { EVENTS_FILE: file });
    try {
      for (let waited = 0; !child.stdout().includes('ready'); waited += 50) {
        if (waited > 20_000 || child.child.exitCode !== null)
          throw new Error(`the child did not get ready:\n${child.output()}`);
        await sleep(50);
      }
      expect(pageCount(file)).to.be.greaterThan(20); // the first 500 were checkpointed
    } finally {
      child.child.kill('SIGKILL');
      await exitWithin(child, 5_000);
    }
    const reopened = SqliteEventStore.open(file);
    try {
      const all = await reopened.readAll({ maxCount: 5_000 });
      expect(all.map((e) => (e.data as { n: number }).n).sort((a, b) => a - b)).to.deep.equal(
        Array.from({ length: 1_000 }, (_, i) => i),
      );
    } finally {
      await reopened.close();
    }
  });
});

describe('enterWal: switching to WAL on a file another connection is writing', function () {
  let dir: string;

  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-enter-wal-'));
  });

  afterEach(function () {
    sinon.restore();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A thread that opens `file` in rollback mode and holds a write transaction on it (BEGIN
   * IMMEDIATE) for `holdMs`; `state[0]` is 1 while it holds the lock, 2 once it let go.
   */
  const holdWriteLock = async (file: string, holdMs: number) => {
    const state = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(
      `const Database = require('better-sqlite3');
       const { workerData } = require('node:worker_threads');
       const db = new Database(workerData.file);
       db.exec('BEGIN IMMEDIATE; CREATE TABLE held (a)');
       Atomics.store(workerData.state, 0, 1);
       Atomics.notify(workerData.state, 0);
       Atomics.wait(workerData.state, 0, 1, workerData.holdMs);
       db.exec('COMMIT');
       db.close();
       Atomics.store(workerData.state, 0, 2);`,
      { eval: true, workerData: { file, state, holdMs } },
    );
    const exited = new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('exit', () => resolve());
    });
    // the lock is taken within a few seconds whatever the machine's load
    for (let waited = 0; Atomics.load(state, 0) === 0 && waited < 10_000; waited += 10) await sleep(10);
    expect(Atomics.load(state, 0), 'the other thread holds its write lock').to.equal(1);
    return { state, exited };
  };

  it('waits for a writer in rollback mode to let go (SQLite itself answers SQLITE_BUSY at once), then the file is in WAL mode', async function () {
    this.timeout(30_000);
    const file = path.join(dir, 'fresh.db');
    const { state, exited } = await holdWriteLock(file, 1_000);
    const db = new Database(file, { timeout: 10_000 });
    try {
      // SQLite's own answer, which the busy timeout does not wait on: the failure that enterWal retries
      expect(() => db.pragma('journal_mode = WAL'))
        .to.throw()
        .with.property('code', 'SQLITE_BUSY');
      enterWal(db);
      expect(Atomics.load(state, 0), 'the other thread had let go').to.equal(2);
      expect(db.pragma('journal_mode', { simple: true })).to.equal('wal');
      expect(db.prepare('SELECT count(*) AS n FROM held').get()).to.deep.equal({ n: 0 });
    } finally {
      db.close();
      await exited;
    }
  });

  it("a lock held past the connection's busy timeout ends in its SQLITE_BUSY error", async function () {
    this.timeout(30_000);
    const file = path.join(dir, 'held.db');
    const { state, exited } = await holdWriteLock(file, 5_000);
    const db = new Database(file, { timeout: 200 });
    try {
      const started = performance.now();
      expect(() => enterWal(db))
        .to.throw()
        .with.property('code', 'SQLITE_BUSY');
      expect(performance.now() - started).to.be.at.least(200);
      expect(Atomics.load(state, 0), 'the other thread still held its lock').to.equal(1);
    } finally {
      Atomics.notify(state, 0); // lets the other thread go at once
      db.close();
      await exited;
    }
  });

  it('any other error is thrown at once, without a retry', function () {
    const db = new Database(path.join(dir, 'other.db'), { timeout: 10_000 });
    const pragma = sinon.stub(db, 'pragma');
    pragma.withArgs('busy_timeout').returns(10_000);
    pragma.withArgs('journal_mode = WAL').throws(new Database.SqliteError('disk I/O error', 'SQLITE_IOERR'));
    try {
      expect(() => enterWal(db)).to.throw('disk I/O error');
      expect(pragma.withArgs('journal_mode = WAL').callCount).to.equal(1);
    } finally {
      pragma.restore();
      db.close();
    }
  });
});
