/**
 * The snapshot writer thread (src/infrastructure/snapshots/snapshotWriterThread.ts): a
 * SqliteSnapshotStore opened with `writer: 'thread'` writes its snapshots on a thread of its own
 * (at nice 10: test/unit/threadIdentity.test.ts), a window of saves at a time, and its reads,
 * other connections and a thread that dies all see a consistent file.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import { SqliteSnapshotStore } from '../../src/infrastructure/snapshots/sqliteSnapshotStore.ts';
import {
  SnapshotWriterEnded,
  terminateSnapshotWriter,
} from '../../src/infrastructure/snapshots/snapshotWriterThread.ts';
import { tempFileEach } from '../support/tempFiles.ts';

/** The names of this process's threads (Linux). */
const threadNames = (): string[] =>
  fs.readdirSync('/proc/self/task').map((tid) => fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());

describe('snapshot writer thread', function () {
  this.timeout(20_000);
  const file = tempFileEach('snapshot-writer-', 'snapshots.db');

  it('writes a save on the thread; once it resolved, the store reads what it wrote', async () => {
    const store = SqliteSnapshotStore.open(file(), { writer: 'thread' });
    try {
      expect(
        await store.save('voucher-a', -1, 4, { usageCount: 2 }, [
          ['o:1', 'va_1'],
          ['c:k', 2],
        ]),
      ).to.equal(true);
      expect(await store.load('voucher-a')).to.deep.equal({ revision: 4, core: { usageCount: 2 } });
      expect([...(await store.entries('voucher-a', ['o:1', 'c:k', 'o:2']))]).to.deep.equal([
        ['o:1', { value: 'va_1', revision: 4 }],
        ['c:k', { value: 2, revision: 4 }],
      ]);
      if (process.platform === 'linux') expect(threadNames()).to.include('snapshot-writer');
    } finally {
      await store.close();
    }
  });

  it('checks the base against saves of other connections to the file', async () => {
    const threaded = SqliteSnapshotStore.open(file(), { writer: 'thread' });
    const inline = SqliteSnapshotStore.open(file());
    try {
      expect(await threaded.save('voucher-a', -1, 4, { n: 1 }, [])).to.equal(true);
      expect(await inline.save('voucher-a', -1, 5, { n: 2 }, [])).to.equal(false);
      expect(await inline.save('voucher-a', 4, 9, { n: 3 }, [['o:1', 'va_1']])).to.equal(true);
      expect(await threaded.save('voucher-a', 4, 10, { n: 4 }, [])).to.equal(false);
      expect(await threaded.load('voucher-a')).to.deep.equal({ revision: 9, core: { n: 3 } });
    } finally {
      await threaded.close();
      await inline.close();
    }
  });

  it('close waits for the saves not answered yet: they are in the file afterwards', async () => {
    const store = SqliteSnapshotStore.open(file(), { writer: 'thread' });
    const saves = Array.from({ length: 20 }, (_, i) =>
      store.save(`voucher-${i}`, -1, i, { i }, [[`o:${i}`, `va_${i}`]]),
    );
    await store.close();
    expect(await Promise.all(saves)).to.deep.equal(saves.map(() => true));
    const reopened = SqliteSnapshotStore.open(file());
    try {
      for (let i = 0; i < 20; i += 1)
        expect(await reopened.load(`voucher-${i}`)).to.deep.equal({ revision: i, core: { i } });
    } finally {
      await reopened.close();
    }
  });

  it('a thread that ends rejects the saves it did not answer; the next save starts a new thread', async () => {
    const store = SqliteSnapshotStore.open(file(), { writer: 'thread', gatherMs: 0 });
    try {
      await terminateSnapshotWriter();
      // a new thread is starting (it loads its modules first): it ends before it can answer
      const lost = store.save('voucher-a', -1, 4, { n: 1 }, []);
      await terminateSnapshotWriter();
      let error: unknown;
      await lost.catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(SnapshotWriterEnded);
      // nothing was written: the snapshot is still at "none"
      expect(await store.load('voucher-a')).to.equal(undefined);
      expect(await store.save('voucher-a', -1, 5, { n: 2 }, [['o:1', 'va_1']])).to.equal(true);
      expect(await store.load('voucher-a')).to.deep.equal({ revision: 5, core: { n: 2 } });
    } finally {
      await store.close();
    }
  });

  it('a save the thread cannot write rejects with its error and leaves the store usable', async () => {
    const store = SqliteSnapshotStore.open(file(), { writer: 'thread' });
    try {
      expect(await store.save('voucher-a', -1, 1, { n: 1 }, [])).to.equal(true);
      // the core is NOT NULL: a core that serialises to nothing fails the transaction on the thread
      let error: unknown;
      await store.save('voucher-a', 1, 2, undefined, [['o:1', 'va_1']]).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(Error);
      expect((error as Error & { code?: string }).code).to.equal('SQLITE_CONSTRAINT_NOTNULL');
      expect([...(await store.entries('voucher-a', ['o:1']))]).to.deep.equal([]);
      expect(await store.save('voucher-a', 1, 3, { n: 3 }, [])).to.equal(true);
    } finally {
      await store.close();
    }
  });

  /** Whether the promise settles within `ms`. */
  const settlesWithin = (promise: Promise<unknown>, ms: number): Promise<boolean> =>
    Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
    ]);

  it('holds the saves of a window until it ends (here: the close), then answers each in order; a failing save rejects alone', async () => {
    const store = SqliteSnapshotStore.open(file(), { writer: 'thread', gatherMs: 60_000 });
    const first = store.save('voucher-a', -1, 4, { n: 1 }, [['o:1', 'va_1']]);
    // the base check sees the window's earlier saves
    const stale = store.save('voucher-a', -1, 5, { n: 2 }, []);
    // the core is NOT NULL: this save's savepoint rolls back, its entry with it
    const failing = store.save('voucher-a', 4, 6, undefined, [['o:2', 'va_2']]);
    const next = store.save('voucher-a', 4, 9, { n: 3 }, [['o:3', 'va_3']]);
    const other = store.save('voucher-b', -1, 2, { n: 4 }, []);
    const answered = settlesWithin(Promise.race([first, stale, failing, next, other]), 300);
    expect(await answered).to.equal(false);
    await store.close();
    expect(await first).to.equal(true);
    expect(await stale).to.equal(false);
    let error: unknown;
    await failing.catch((e: unknown) => (error = e));
    expect((error as Error & { code?: string }).code).to.equal('SQLITE_CONSTRAINT_NOTNULL');
    expect(await next).to.equal(true);
    expect(await other).to.equal(true);
    const reopened = SqliteSnapshotStore.open(file());
    try {
      expect(await reopened.load('voucher-a')).to.deep.equal({ revision: 9, core: { n: 3 } });
      expect(await reopened.load('voucher-b')).to.deep.equal({ revision: 2, core: { n: 4 } });
      expect([...(await reopened.entries('voucher-a', ['o:1', 'o:2', 'o:3']))]).to.deep.equal([
        ['o:1', { value: 'va_1', revision: 4 }],
        ['o:3', { value: 'va_3', revision: 9 }],
      ]);
    } finally {
      await reopened.close();
    }
  });

  it('a window ends by itself after its time; without a window each save is answered alone', async () => {
    const windowed = SqliteSnapshotStore.open(file(), { writer: 'thread', gatherMs: 50 });
    try {
      const save = windowed.save('voucher-a', -1, 4, { n: 1 }, []);
      expect(await settlesWithin(save, 5_000)).to.equal(true);
      expect(await save).to.equal(true);
    } finally {
      await windowed.close();
    }
    const alone = SqliteSnapshotStore.open(file(), { writer: 'thread', gatherMs: 0 });
    try {
      expect(await alone.save('voucher-a', 4, 7, { n: 2 }, [])).to.equal(true);
      expect(await alone.load('voucher-a')).to.deep.equal({ revision: 7, core: { n: 2 } });
    } finally {
      await alone.close();
    }
  });

  it('a thread that ends holding a window rejects every save in it', async () => {
    const store = SqliteSnapshotStore.open(file(), { writer: 'thread', gatherMs: 60_000 });
    await terminateSnapshotWriter();
    const saves = [store.save('voucher-b', -1, 1, { n: 1 }, []), store.save('voucher-c', -1, 1, { n: 1 }, [])];
    // the close posts the window to a new thread, which ends while it loads its modules
    const closed = store.close();
    await terminateSnapshotWriter();
    const outcomes = await Promise.allSettled(saves);
    await closed;
    expect(outcomes.map((o) => o.status === 'rejected' && o.reason instanceof SnapshotWriterEnded)).to.deep.equal([
      true,
      true,
    ]);
    const reopened = SqliteSnapshotStore.open(file());
    try {
      expect(await reopened.load('voucher-b')).to.equal(undefined);
    } finally {
      await reopened.close();
    }
  });
});
