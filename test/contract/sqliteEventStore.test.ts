import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import sinon from 'sinon';
import { WrongExpectedRevisionError, type RecordedEvent } from '../../src/core/eventStore.ts';
import type { CommittedEvents, FlushInfo } from '../../src/infrastructure/eventStore/sqliteGroupCommit.ts';
import {
  SqliteEventStore,
  type SqliteEventStoreOptions,
} from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { WAL_AUTOCHECKPOINT_PAGES } from '../../src/infrastructure/sqliteWal.ts';
import { eventStoreContract } from './eventStoreContract.ts';

const STORE_MODULE = fileURLToPath(new URL('../../src/infrastructure/eventStore/sqliteEventStore.ts', import.meta.url));

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'es-'));
}

eventStoreContract('SqliteEventStore', async () => {
  const dir = tempDir();
  const store = SqliteEventStore.open(path.join(dir, 'events.db'));
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteEventStore (SQLite specifics)', function () {
  let dir: string;
  let file: string;
  const opened: SqliteEventStore[] = [];

  function open(options: SqliteEventStoreOptions = {}): SqliteEventStore {
    const store = SqliteEventStore.open(file, options);
    opened.push(store);
    return store;
  }

  beforeEach(function () {
    dir = tempDir();
    file = path.join(dir, 'nested', 'dir', 'events.db');
  });

  afterEach(async function () {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates the parent directory and sets WAL, synchronous=FULL, a busy timeout and the checkpoint interval', function () {
    const store = open();
    expect(fs.existsSync(file)).to.equal(true);
    expect(store.pragmas()).to.deep.equal({
      journalMode: 'wal',
      synchronous: 2,
      busyTimeoutMs: 5000,
      walAutocheckpoint: WAL_AUTOCHECKPOINT_PAGES, // 0: checkpoints run on the checkpointer thread
    });
  });

  it('group commit: 100 appends issued in one tick are written by one transaction and durable', async function () {
    const flushes: FlushInfo[] = [];
    const store = open({ onFlush: (info) => flushes.push(info) });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.appendToStream(`batch-${i}`, [{ type: 'Batched', data: { i } }], { expectedRevision: 'no_stream' }),
      ),
    );
    expect(flushes).to.deep.equal([{ appends: 100, events: 100 }]);
    expect(results.map((r) => r.position)).to.deep.equal(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(await store.headPosition()).to.equal(100);

    // Committed: another connection sees all of them while the store is still open.
    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.prepare('SELECT COUNT(*) AS n FROM events').get()).to.deep.equal({ n: 100 });
    } finally {
      raw.close();
    }
  });

  it('group commit checks each append against the batch so far and rejects only the failing ones', async function () {
    const flushes: FlushInfo[] = [];
    const store = open({ onFlush: (info) => flushes.push(info) });
    const settled = await Promise.allSettled([
      store.appendToStream('a', [{ type: 'A0', data: {} }], { expectedRevision: 'no_stream' }),
      store.appendToStream('a', [{ type: 'Dup', data: {} }], { expectedRevision: 'no_stream' }),
      store.appendToStream(
        'a',
        [
          { type: 'A1', data: {} },
          { type: 'A2', data: {} },
        ],
        { expectedRevision: 0 },
      ),
      store.appendToStream('b', [{ type: 'B?', data: {} }], { expectedRevision: 'stream_exists' }),
      store.appendToStream('c', [{ type: 'C0', data: {} }], { expectedRevision: 'any' }),
    ]);
    expect(flushes).to.deep.equal([{ appends: 5, events: 4 }]);
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
    expect(settled[2]).to.deep.equal({ status: 'fulfilled', value: { nextExpectedRevision: 2, position: 3 } });
    const [dupError, bError] = [settled[1], settled[3]].map((s) => (s as PromiseRejectedResult).reason);
    expect(dupError).to.be.instanceOf(WrongExpectedRevisionError).and.include({ actual: 0 });
    expect(bError).to.be.instanceOf(WrongExpectedRevisionError).and.include({ actual: -1 });
    expect((await store.readAll()).map((e) => e.type)).to.deep.equal(['A0', 'A1', 'A2', 'C0']);
  });

  it('readAllOfTypes: the page readAll would return, only the types asked for (type, data, position), with its length and last position', async function () {
    const store = open();
    const types = ['Keep', 'Skip', 'Skip', 'Keep', 'Skip', 'Other', 'Skip'];
    for (const [i, type] of types.entries())
      await store.appendToStream(`s-${i % 2}`, [{ type, data: { i, text: 'ü"\\' } }]);
    const all = await store.readAll();
    for (const [after, maxCount] of [
      [0, 3],
      [1, 3],
      [3, 100],
      [5, 2],
      [0, 7],
    ] as const) {
      const page = await store.readAllOfTypes({ after, maxCount, types: ['Keep', 'Other'] });
      const expected = all.filter((e) => e.position > after).slice(0, maxCount);
      expect(page, `after ${after}, ${maxCount}`).to.deep.equal({
        events: expected
          .filter((e) => e.type === 'Keep' || e.type === 'Other')
          .map(({ type, data, position }) => ({ type, data, position })),
        scanned: expected.length,
        lastPosition: expected.at(-1)!.position,
      });
    }
    // a page of no wanted type still spans its events
    expect(await store.readAllOfTypes({ after: 4, maxCount: 1, types: ['Keep'] })).to.deep.equal({
      events: [],
      scanned: 1,
      lastPosition: 5,
    });
    expect(await store.readAllOfTypes({ after: 7, maxCount: 10, types: ['Keep'] })).to.deep.equal({
      events: [],
      scanned: 0,
      lastPosition: 7,
    });
  });

  it('readAllOfTypes with an upcaster filters on the upcast type', async function () {
    const writer = open();
    await writer.appendToStream('s', [
      { type: 'OldName', data: { n: 1 } },
      { type: 'Skip', data: {} },
      { type: 'NewName', data: { n: 2 } },
    ]);
    const reader = open({
      upcast: (e) => (e.type === 'OldName' ? { ...e, type: 'NewName', data: { ...e.data, upcast: true } } : e),
    });
    const page = await reader.readAllOfTypes({ after: 0, maxCount: 10, types: ['NewName'] });
    expect(page.events.map((e) => [e.type, e.data])).to.deep.equal([
      ['NewName', { n: 1, upcast: true }],
      ['NewName', { n: 2 }],
    ]);
    expect(page).to.include({ scanned: 3, lastPosition: 3 });
  });

  it('a duplicate event id rejects only its own append', async function () {
    const store = open();
    const id = '0b7c3a58-6d0b-4a53-9a3f-3f1f3c9b0a11';
    const settled = await Promise.allSettled([
      store.appendToStream('x', [{ id, type: 'First', data: {} }]),
      store.appendToStream('y', [
        { type: 'Y0', data: {} },
        { id, type: 'Again', data: {} },
      ]),
      store.appendToStream('z', [{ type: 'Z0', data: {} }]),
    ]);
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).to.include({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect((await store.readAll()).map((e) => `${e.streamId}:${e.type}`)).to.deep.equal(['x:First', 'z:Z0']);
    expect(await store.readStream('y')).to.deep.equal([]);
  });

  it('rejects every append of a batch when the transaction fails (SQLITE_BUSY), writing nothing', async function () {
    const store = open({ busyTimeoutMs: 50 });
    const locker = new Database(file);
    locker.exec('BEGIN IMMEDIATE');
    let settled: PromiseSettledResult<unknown>[];
    try {
      settled = await Promise.allSettled(
        ['p', 'q', 'r'].map((streamId) => store.appendToStream(streamId, [{ type: 'Blocked', data: {} }])),
      );
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
    }
    expect(
      settled.map((s) => (s.status === 'rejected' ? (s.reason as { code?: string }).code : s.status)),
    ).to.deep.equal(['SQLITE_BUSY', 'SQLITE_BUSY', 'SQLITE_BUSY']);
    expect(await store.readAll()).to.deep.equal([]);
    expect(
      await store.appendToStream('p', [{ type: 'Unblocked', data: {} }], { expectedRevision: 'no_stream' }),
    ).to.deep.equal({ nextExpectedRevision: 0, position: 1 });
  });

  it('disk full mid-batch: every append of the batch is rejected and nothing is written', async function () {
    // White-box: cap the committing connection's file size so the next batch hits SQLITE_FULL;
    // inline, that connection is the store's own (the writer thread's is out of reach).
    const store = open({ writer: 'inline' });
    await store.appendToStream('warm', [{ type: 'Warm', data: {} }]);
    const db = (store as unknown as { db: Database.Database }).db;
    db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true })) + 2}`);
    const big = 'x'.repeat(3000);
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => store.appendToStream(`full-${i}`, [{ type: 'Big', data: { big } }])),
    );
    expect(
      settled.map((s) => (s.status === 'rejected' ? (s.reason as { code?: string }).code : s.status)),
    ).to.deep.equal(Array(10).fill('SQLITE_FULL'));
    expect((await store.readAll()).map((e) => e.streamId)).to.deep.equal(['warm']);
    expect(await store.readStream('full-0')).to.deep.equal([]);
  });

  it('an empty append writes nothing and reports the current revision and head', async function () {
    const store = open();
    await store.appendToStream('s', [
      { type: 'E0', data: {} },
      { type: 'E1', data: {} },
    ]);
    await store.appendToStream('t', [{ type: 'T0', data: {} }]);
    expect(await store.appendToStream('s', [], { expectedRevision: 1 })).to.deep.equal({
      nextExpectedRevision: 1,
      position: 3,
    });
    expect(await store.appendToStream('new', [], { expectedRevision: 'no_stream' })).to.deep.equal({
      nextExpectedRevision: -1,
      position: 3,
    });
    const error = await store.appendToStream('s', [], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(WrongExpectedRevisionError).and.include({ actual: 1 });
    expect(await store.headPosition()).to.equal(3);
  });

  it('generates increasing UUIDv7 event ids (the id index grows at its right edge)', async function () {
    const store = open();
    await store.appendToStream(
      'ids',
      Array.from({ length: 20 }, (_, i) => ({ type: `E${i}`, data: {} })),
    );
    await store.appendToStream('ids', [{ type: 'Later', data: {} }]);
    const ids = (await store.readStream('ids')).map((e) => e.id);
    for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).to.deep.equal(ids);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('keeps events, revisions and positions across close and reopen', async function () {
    const first = open();
    await first.appendToStream('v', [
      { type: 'V0', data: { n: 1 }, metadata: { m: true } },
      { type: 'V1', data: {} },
    ]);
    await first.appendToStream('w', [{ type: 'W0', data: {} }]);
    const before = await first.readAll();
    await first.close();

    const reopened = open();
    expect(await reopened.readAll()).to.deep.equal(before);
    expect(await reopened.headPosition()).to.equal(3);
    const error = await reopened
      .appendToStream('v', [{ type: 'X', data: {} }], { expectedRevision: 0 })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(WrongExpectedRevisionError).and.include({ actual: 1 });
    expect(await reopened.appendToStream('v', [{ type: 'V2', data: {} }], { expectedRevision: 1 })).to.deep.equal({
      nextExpectedRevision: 2,
      position: 4,
    });
  });

  it('close() writes appends still queued, then refuses new work', async function () {
    const store = open();
    const pending = store.appendToStream('late', [{ type: 'Queued', data: {} }]);
    await store.close();
    expect(await pending).to.deep.equal({ nextExpectedRevision: 0, position: 1 });
    const error = await store.appendToStream('late', [{ type: 'TooLate', data: {} }]).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Error);
    expect(() => store.subscribeToAll({}, () => {})).to.throw(/closed/);

    const reopened = open();
    expect((await reopened.readAll()).map((e) => e.type)).to.deep.equal(['Queued']);
  });

  it('close() stops running subscriptions', async function () {
    const store = open();
    const subscription = store.subscribeToAll({}, () => {});
    await store.close();
    await subscription.close(); // already stopped: resolves at once
  });

  it("wakes subscriptions on this process's commits without waiting for a poll", async function () {
    const store = open({ pollIntervalMs: 3_600_000 });
    const received: RecordedEvent[] = [];
    const subscription = store.subscribeToAll({}, (batch) => {
      received.push(...batch);
    });
    await sleep(20); // let the subscription catch up and start waiting
    await store.appendToStream('wake', [{ type: 'Woken', data: {} }]);
    await waitFor(() => received.length === 1);
    await subscription.close();
    expect(received.map((e) => e.type)).to.deep.equal(['Woken']);
  });

  it('rows another instance committed, offered to this one (offerExternalCommit), are delivered without a poll; a gap is read', async function () {
    const offered: CommittedEvents[] = [];
    const writer = open({ onCommitted: (committed) => offered.push(committed) });
    const reader = open({ pollIntervalMs: 60_000 }); // no poll during the test: only offers deliver
    await writer.appendToStream('s', [{ type: 'Before', data: {} }]);
    const received: RecordedEvent[] = [];
    const subscription = reader.subscribeToAll({}, (batch) => {
      received.push(...batch);
    });
    await waitFor(() => received.length === 1); // the first read catches up
    const readAfter = sinon.spy(
      reader as unknown as { readAfter(after: number, max: number): RecordedEvent[] },
      'readAfter',
    );
    offered.length = 0;
    await writer.appendToStream('s', [
      { type: 'A', data: { n: 1 } },
      { type: 'B', data: {} },
    ]);
    reader.offerExternalCommit(offered[0]!);
    await waitFor(() => received.length === 3);
    expect(readAfter.callCount).to.equal(0); // taken from the offer, not read back
    expect(received.slice(1).map((e) => [e.type, e.revision, e.data])).to.deep.equal([
      ['A', 1, { n: 1 }],
      ['B', 2, {}],
    ]);
    // A commit whose rows were not offered leaves a gap: the next offer is not taken, the store is read.
    await writer.appendToStream('s', [{ type: 'Missed', data: {} }]);
    await writer.appendToStream('s', [{ type: 'C', data: {} }]);
    reader.offerExternalCommit(offered.at(-1)!);
    await waitFor(() => received.length === 5);
    expect(received.slice(3).map((e) => e.type)).to.deep.equal(['Missed', 'C']);
    expect(readAfter.callCount).to.be.greaterThan(0);
    await subscription.close();
  });

  it('onlyTypes: passes over other types undecoded, delivers a wanted event alone, and delivers everything once it is no longer asked', async function () {
    const store = open({ pollIntervalMs: 20 });
    await store.appendToStream('v', [
      { type: 'Other', data: { n: 1 } },
      { type: 'Other', data: { n: 2 } },
    ]);
    // the wanted event and the one right after it in one commit: the second must not be passed over
    await store.appendToStream('w', [
      { type: 'Wanted', data: {} },
      { type: 'Other', data: { n: 3 } },
    ]);
    const decode = sinon.spy(store as unknown as { decode(row: unknown): RecordedEvent }, 'decode');
    let onlyWanted = true;
    const batches: Array<{ types: string[]; through: number | undefined }> = [];
    const subscription = store.subscribeToAll(
      { onlyTypes: () => (onlyWanted ? ['Wanted'] : undefined) },
      (batch, through) => {
        batches.push({ types: batch.map((e) => e.type), through });
        if (batch.some((e) => e.type === 'Wanted')) onlyWanted = false;
      },
    );
    await waitFor(() => batches.length === 2);
    expect(batches).to.deep.equal([
      { types: ['Wanted'], through: 3 },
      { types: ['Other'], through: 4 },
    ]);
    expect(decode.callCount).to.equal(2); // the two Others before the wanted event were not decoded
    // asked for a type again: the others are passed over, an empty batch tells how far
    onlyWanted = true;
    await store.appendToStream('v', [{ type: 'Other', data: { n: 4 } }]);
    await store.appendToStream('v', [{ type: 'Other', data: { n: 5 } }]);
    await waitFor(() => batches.at(-1)!.through === 6);
    expect(batches.slice(2).flatMap((b) => b.types)).to.deep.equal([]);
    expect(decode.callCount).to.equal(2);
    await store.appendToStream('w', [{ type: 'Wanted', data: { again: true } }]);
    await waitFor(() => batches.at(-1)!.through === 7);
    expect(batches.at(-1)).to.deep.equal({ types: ['Wanted'], through: 7 });
    await subscription.close();
  });

  it('onlyTypes looks at most 10,000 events ahead per read: a long stretch without a wanted event is passed over in steps', async function () {
    const store = open({ pollIntervalMs: 20 });
    await store.appendToStream(
      'v',
      Array.from({ length: 10_050 }, (_, n) => ({ type: 'Other', data: { n } })),
    );
    await store.appendToStream('w', [{ type: 'Wanted', data: {} }]);
    const batches: Array<{ types: string[]; through: number | undefined }> = [];
    const subscription = store.subscribeToAll({ onlyTypes: () => ['Wanted'] }, (batch, through) => {
      batches.push({ types: batch.map((e) => e.type), through });
    });
    await waitFor(() => batches.length === 2);
    await subscription.close();
    expect(batches).to.deep.equal([
      { types: [], through: 10_000 },
      { types: ['Wanted'], through: 10_051 },
    ]);
  });

  it('onlyTypes is ignored with an upcaster (it may rename the stored types): every event is delivered', async function () {
    const store = open({ pollIntervalMs: 20, upcast: (e) => e });
    await store.appendToStream('v', [
      { type: 'Other', data: {} },
      { type: 'Wanted', data: {} },
    ]);
    const received: string[] = [];
    const subscription = store.subscribeToAll({ onlyTypes: () => ['Wanted'] }, (batch) => {
      received.push(...batch.map((e) => e.type));
    });
    await waitFor(() => received.length === 2);
    await subscription.close();
    expect(received).to.deep.equal(['Other', 'Wanted']);
  });

  it("a second instance on the same file appends and the first one's subscription sees it (polling)", async function () {
    const first = open({ pollIntervalMs: 20 });
    const second = open({ pollIntervalMs: 20 });
    await first.appendToStream('shared', [{ type: 'FromFirst', data: {} }]);
    const received: RecordedEvent[] = [];
    const subscription = first.subscribeToAll({}, (batch) => {
      received.push(...batch);
    });
    await waitFor(() => received.length === 1);

    const conflict = await second
      .appendToStream('shared', [{ type: 'Stale', data: {} }], { expectedRevision: 'no_stream' })
      .catch((e: unknown) => e);
    expect(conflict).to.be.instanceOf(WrongExpectedRevisionError).and.include({ actual: 0 });
    await second.appendToStream('shared', [{ type: 'FromSecond', data: {} }], { expectedRevision: 0 });
    await waitFor(() => received.length === 2);
    await subscription.close();
    expect(received.map((e) => `${e.revision}:${e.type}`)).to.deep.equal(['0:FromFirst', '1:FromSecond']);
  });

  it("own commits are handed to caught-up subscriptions; another instance's commit in between is read, not skipped", async function () {
    const first = open({ pollIntervalMs: 60_000 }); // no poll: the gap must be seen from the handed-over commit
    const second = open();
    const received: RecordedEvent[][] = [[], []];
    const subscriptions = received.map((into) =>
      first.subscribeToAll({}, (batch) => {
        into.push(...batch);
      }),
    );
    await first.appendToStream('s', [{ type: 'A1', data: { n: 1 } }]);
    await waitFor(() => received.every((r) => r.length === 1));
    await second.appendToStream('s', [{ type: 'B1', data: {} }]);
    await first.appendToStream('s', [
      { type: 'A2', data: {} },
      { type: 'A3', data: {} },
    ]);
    await waitFor(() => received.every((r) => r.length === 4));
    await Promise.all(subscriptions.map((s) => s.close()));
    const stored = await first.readAll();
    for (const events of received) expect(events).to.deep.equal(stored);
    expect(stored.map((e) => `${e.position}:${e.type}`)).to.deep.equal(['1:A1', '2:B1', '3:A2', '4:A3']);
    expect(received[0][0]).to.not.equal(received[1][0]); // each subscription gets its own objects
    expect(received[0][0].data).to.not.equal(received[1][0].data);
  });

  it('another OS process writing concurrently: no lost, duplicated or out-of-order events', async function () {
    const store = open({ pollIntervalMs: 20 });
    const received: RecordedEvent[] = [];
    const subscription = store.subscribeToAll({ maxBatchSize: 7 }, (batch) => {
      received.push(...batch);
    });
    const child = runChildWriter(file, 40);
    let parentAppends = 0;
    while (!child.exited) {
      await Promise.all([0, 1, 2].map(() => store.appendToStream('shared', [{ type: 'Parent', data: {} }])));
      parentAppends += 3;
      await sleep(0); // yield to timers and I/O even if appends settled as microtasks only
    }
    expect(await child.done).to.equal(0);
    const total = parentAppends + 40 * 3;
    await waitFor(() => received.length === total);
    await subscription.close();

    expect(received.map((e) => e.position)).to.deep.equal(Array.from({ length: total }, (_, i) => i + 1));
    const shared = await store.readStream('shared');
    expect(shared.map((e) => e.revision)).to.deep.equal(Array.from({ length: total }, (_, i) => i));
    expect(shared.filter((e) => e.type === 'Child')).to.have.length(120);
  });
});

/** Spawns a separate Node process appending `rounds` x 3 concurrent events to 'shared'. */
function runChildWriter(file: string, rounds: number): { done: Promise<number | null>; exited: boolean } {
  const code = `
    const { SqliteEventStore } = await import(process.argv[1]);
    const store = SqliteEventStore.open(process.argv[2]);
    for (let round = 0; round < Number(process.argv[3]); round += 1) {
      await Promise.all([0, 1, 2].map(() => store.appendToStream('shared', [{ type: 'Child', data: { round } }])));
    }
    await store.close();`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', code, STORE_MODULE, file, String(rounds)],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const state = {
    exited: false,
    done: new Promise<number | null>((resolve, reject) => {
      child.once('error', (error) => {
        state.exited = true;
        reject(error);
      });
      child.once('exit', (exitCode) => {
        state.exited = true;
        resolve(exitCode);
      });
    }),
  };
  return state;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitFor(condition: () => boolean, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for condition');
    await sleep(5);
  }
}
