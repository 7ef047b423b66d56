import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { WrongExpectedRevisionError } from '../../src/core/eventStore.ts';
import type { AnyEvent } from '../../src/core/decider.ts';
import {
  SqliteEventStore,
  type SqliteEventStoreOptions,
} from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { WriterThreadEnded, type ForwardedCommits } from '../../src/infrastructure/eventStore/sqliteWriterThread.ts';

/** White-box: the store's side of the writer thread. */
const writerOf = (store: SqliteEventStore<AnyEvent>) =>
  (store as unknown as { writer: { openedOn: Worker | undefined; flush(): void } }).writer;

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Counts the writer side's reads of the opening connection for the change token (white-box). */
const connectionReads = (store: SqliteEventStore<AnyEvent>) => {
  const options = (store as unknown as { writer: { options: { dataVersion(): number; headPosition(): number } } })
    .writer.options;
  let count = 0;
  for (const name of ['dataVersion', 'headPosition'] as const) {
    const read = options[name];
    options[name] = () => {
      count += 1;
      return read();
    };
  }
  return { count: () => count };
};

describe('SqliteEventStore writer thread', function () {
  let dir: string;
  let file: string;
  const opened: SqliteEventStore<AnyEvent>[] = [];
  const open = (options: SqliteEventStoreOptions<AnyEvent> = {}) => {
    const store = SqliteEventStore.open<AnyEvent>(file, options);
    opened.push(store);
    return store;
  };

  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'writer-thread-'));
    file = path.join(dir, 'events.db');
  });

  afterEach(async function () {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("startWriter opens the store's connection on the thread at once; without it, at the first append", async function () {
    const eager = open({ startWriter: true });
    expect(writerOf(eager).openedOn, 'started with the store').to.not.equal(undefined);
    const lazy = SqliteEventStore.open<AnyEvent>(path.join(dir, 'lazy.db'));
    opened.push(lazy);
    expect(writerOf(lazy).openedOn, 'before any append').to.equal(undefined);
    await lazy.appendToStream('s', [{ type: 'E', data: {} }]);
    expect(writerOf(lazy).openedOn, 'after the first append').to.not.equal(undefined);
    await eager.appendToStream('s', [{ type: 'E', data: {} }]);
    expect(await eager.readStream('s')).to.have.length(1);
  });

  it("commits on a thread of its own: the opening connection's data_version moves, the change token does not", async function () {
    const store = open();
    const before = store.externalChangeToken();
    const version = () => (store as unknown as { db: Database.Database }).db.pragma('data_version', { simple: true });
    const versionBefore = version();
    for (let i = 0; i < 5; i += 1) {
      await store.appendToStream('own', [{ type: 'Own', data: { i } }]);
      await nextTurn();
      expect(store.externalChangeToken(), `after own append ${i}`).to.equal(before);
    }
    expect(version()).to.not.equal(versionBefore); // another connection (the writer's) committed
    expect(writerOf(store).openedOn).to.not.equal(undefined);
  });

  it('the change token changes when another store on the file commits, once, and not on own appends after it', async function () {
    const store = open({ tokenFreshMs: 0 }); // reads its connection each turn: the next turn sees a foreign commit
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await nextTurn();
    const before = store.externalChangeToken();
    const other = open();
    await other.appendToStream('theirs', [{ type: 'Theirs', data: {} }]);
    await nextTurn();
    const after = store.externalChangeToken();
    expect(after).to.not.equal(before);
    // the own writer then finds the foreign commit too, under its write lock: not counted again
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await nextTurn();
    expect(store.externalChangeToken()).to.equal(after);
    // a foreign commit the opening thread has not looked at before the own writer's next transaction
    await other.appendToStream('theirs', [{ type: 'Theirs', data: {} }]);
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await nextTurn();
    const third = store.externalChangeToken();
    expect(third).to.not.equal(after);
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await nextTurn();
    expect(store.externalChangeToken()).to.equal(third);
  });

  it('while the thread read the head within tokenFreshMs, settling the token reads nothing on the opening connection', async function () {
    const store = open({ tokenFreshMs: 60_000 });
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await nextTurn();
    const before = store.externalChangeToken();
    const reads = connectionReads(store);
    for (let i = 0; i < 5; i += 1) {
      await store.appendToStream('own', [{ type: 'Own', data: { i } }]);
      await nextTurn();
      expect(store.externalChangeToken(), `after own append ${i}`).to.equal(before);
    }
    expect(reads.count(), 'reads of data_version or the head').to.equal(0);
  });

  it('a foreign commit after the thread last read the head changes the token once tokenFreshMs has passed', async function () {
    const freshMs = 150;
    const store = open({ tokenFreshMs: freshMs });
    const other = open();
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await nextTurn();
    const before = store.externalChangeToken();
    const reads = connectionReads(store);
    const looked = performance.now(); // at most when the thread reads the head
    await store.appendToStream('own', [{ type: 'Own', data: {} }]);
    await other.appendToStream('theirs', [{ type: 'Theirs', data: {} }]); // then the foreign commit
    await nextTurn();
    store.externalChangeToken();
    // Within tokenFreshMs of `looked` the thread's read of the head is younger still: nothing read.
    // Past it (a machine slower than freshMs) the read may or may not be older than freshMs, which
    // the test cannot see: only the bound below holds either way.
    if (performance.now() - looked < freshMs) expect(reads.count(), 'a read within tokenFreshMs').to.equal(0);
    await new Promise((resolve) => setTimeout(resolve, freshMs + 10));
    expect(store.externalChangeToken()).to.not.equal(before);
    expect(reads.count()).to.be.greaterThan(0);
  });

  it('with tokenFreshMs 0, every turn that settles the token reads the opening connection', async function () {
    const store = open({ tokenFreshMs: 0 });
    const reads = connectionReads(store);
    for (let i = 0; i < 3; i += 1) {
      await store.appendToStream('own', [{ type: 'Own', data: { i } }]);
      await nextTurn();
      store.externalChangeToken();
    }
    expect(reads.count()).to.be.at.least(3);
  });

  it('errors cross the thread as the classes and codes callers check', async function () {
    const store = open();
    await store.appendToStream('s', [{ type: 'A', data: {} }]);
    const revision = await store
      .appendToStream('s', [{ type: 'B', data: {} }], { expectedRevision: 'no_stream' })
      .catch((e: unknown) => e);
    expect(revision).to.be.instanceOf(WrongExpectedRevisionError);
    expect(revision).to.include({ streamId: 's', expected: 'no_stream', actual: 0 });
    const id = '0b7c3a58-6d0b-4a53-9a3f-3f1f3c9b0a11';
    await store.appendToStream('t', [{ id, type: 'First', data: {} }]);
    const duplicate = await store.appendToStream('u', [{ id, type: 'Again', data: {} }]).catch((e: unknown) => e);
    expect(duplicate).to.be.instanceOf(Database.SqliteError).and.include({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
  });

  it('a writer thread that ends rejects the appends it did not answer; the next append starts a new one', async function () {
    const store = open();
    await store.appendToStream('s', [{ type: 'A', data: {} }]);
    const token = store.externalChangeToken();
    const writer = writerOf(store);
    const first = writer.openedOn!;
    const pending = store.appendToStream('s', [{ type: 'Lost?', data: {} }]).catch((e: unknown) => e);
    void first.terminate();
    writer.flush(); // posted to a thread that is ending: never answered
    const error = await pending;
    expect(error).to.be.instanceOf(WriterThreadEnded);
    expect((error as Error).message).to.match(/writer thread ended .* may or may not have been written/);
    await nextTurn();
    expect(store.externalChangeToken()).to.not.equal(token); // caches are read again
    expect(await store.appendToStream('s', [{ type: 'B', data: {} }], { expectedRevision: 0 })).to.deep.equal({
      nextExpectedRevision: 1,
      position: 2,
    });
    expect(writerOf(store).openedOn).to.not.equal(first);
    expect((await store.readStream('s')).map((e) => e.type)).to.deep.equal(['A', 'B']);
  });

  /** A feed whose ports record each message: the port's index and each commit's positions. */
  const recordingFeed = () => {
    const received: Array<{ port: number; commits: number[][] }> = [];
    const ends: MessagePort[] = [];
    const feed = () => {
      const { port1, port2 } = new MessageChannel();
      const index = ends.length;
      port2.on('message', (message: ForwardedCommits) =>
        received.push({ port: index, commits: message.commits.map((c) => c.rows.map((row) => row.position)) }),
      );
      ends.push(port2);
      return port1;
    };
    const arrived = async (count: number) => {
      for (let i = 0; i < 200 && received.length < count; i++) await new Promise((r) => setTimeout(r, 10));
    };
    return { received, ends, feed, arrived };
  };

  it('forwards each commit to the port the feed makes, and asks for a new port when a new thread opens the store', async function () {
    const store = open({ startWriter: true });
    const { received, ends, feed, arrived } = recordingFeed();
    try {
      expect(store.forwardCommits(feed)).to.equal(true);
      expect(ends).to.have.length(1); // the store is open on the thread: a port at once
      await store.appendToStream('s', [
        { type: 'A', data: {} },
        { type: 'B', data: {} },
      ]);
      await arrived(1);
      expect(received).to.deep.equal([{ port: 0, commits: [[1, 2]] }]);
      // a rejected append commits nothing: nothing is forwarded
      await store.appendToStream('s', [{ type: 'C', data: {} }], { expectedRevision: 0 }).catch(() => undefined);
      const first = writerOf(store).openedOn!;
      await first.terminate();
      await nextTurn();
      await store.appendToStream('s', [{ type: 'D', data: {} }]); // a new thread: a new port
      await arrived(2);
      expect(ends).to.have.length(2);
      expect(received).to.deep.equal([
        { port: 0, commits: [[1, 2]] },
        { port: 1, commits: [[3]] },
      ]);
    } finally {
      for (const end of ends) end.close();
    }
  });

  it('with a window, posts the commits of the window in one message, in order, and what it holds when the store closes', async function () {
    const store = open({ startWriter: true });
    const { received, ends, feed, arrived } = recordingFeed();
    try {
      expect(store.forwardCommits(feed, 60_000)).to.equal(true);
      await store.appendToStream('a', [{ type: 'A', data: {} }]);
      await store.appendToStream('b', [
        { type: 'B', data: {} },
        { type: 'C', data: {} },
      ]);
      await new Promise((r) => setTimeout(r, 100));
      expect(received).to.deep.equal([]); // the window of a minute holds them
      await store.close();
      await arrived(1);
      expect(received).to.deep.equal([{ port: 0, commits: [[1], [2, 3]] }]);
    } finally {
      for (const end of ends) end.close();
    }
  });

  it('a window ends by itself: its commits arrive once it has passed, and a later commit opens the next', async function () {
    const store = open({ startWriter: true });
    const { received, ends, feed, arrived } = recordingFeed();
    try {
      store.forwardCommits(feed, 1_000);
      for (const stream of ['a', 'b', 'c']) await store.appendToStream(stream, [{ type: 'A', data: {} }]);
      await arrived(1);
      expect(received).to.deep.equal([{ port: 0, commits: [[1], [2], [3]] }]); // three commits, one message
      await store.appendToStream('d', [{ type: 'D', data: {} }]);
      await arrived(2);
      expect(received).to.deep.equal([
        { port: 0, commits: [[1], [2], [3]] },
        { port: 0, commits: [[4]] },
      ]);
    } finally {
      for (const end of ends) end.close();
    }
  });

  it("inline (writer: 'inline') commits on the calling thread's connection", async function () {
    const store = open({ writer: 'inline' });
    const token = store.externalChangeToken();
    await store.appendToStream('s', [{ type: 'A', data: {} }]);
    await nextTurn();
    expect(store.externalChangeToken()).to.equal(token);
    expect((store as unknown as { writer: unknown }).writer).to.equal(undefined);
    expect(store.forwardCommits(() => undefined)).to.equal(false); // nothing to forward from
  });
});
