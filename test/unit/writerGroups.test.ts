/**
 * The core group on the event store's writer thread (decision 087; src/infrastructure/projector/
 * threadGroups.ts and sqliteWriterThread.worker.ts): a commit is answered once the group has
 * folded it, the group's checkpoint reaches the opening thread through shared memory (or a
 * message while a caller waits), a close leaves the group at the head of the log, a writer thread
 * that dies is replaced with its group, and a group that cannot start fails its handle only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import type { AnyEvent } from '../../src/core/decider.ts';
import {
  SqliteEventStore,
  type SqliteEventStoreOptions,
} from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { CORE_CHECKPOINT, CORE_GROUP } from '../../src/projections/index.ts';
import { voucherApplied, voucherCreated } from '../fixtures/events.ts';

/** White-box: the worker the store's connection is open on. */
const workerOf = (store: SqliteEventStore<AnyEvent>) =>
  (store as unknown as { writer: { openedOn: Worker | undefined } }).writer.openedOn;

const applied = (n: number) => voucherApplied({ applicationId: `va_${n}`, orderId: `o${n}` });

describe('the core group on the writer thread', function () {
  this.timeout(30_000);
  let dir: string;
  let eventsFile: string;
  let readsFile: string;
  const opened: SqliteEventStore<AnyEvent>[] = [];

  const open = (over: Partial<NonNullable<SqliteEventStoreOptions['groupsOnWriter']>> = {}) => {
    const store = SqliteEventStore.open<AnyEvent>(eventsFile, {
      startWriter: true,
      groupsOnWriter: {
        environment: 'sandbox',
        groups: [CORE_GROUP.name],
        readsFile,
        logLevel: 'silent',
        pollIntervalMs: 60_000, // no polling: only the commits handed over (and catch-up reads) feed it
        ...over,
      },
    });
    opened.push(store);
    return store;
  };

  /** What a fresh connection to read.db finds: the core checkpoint and the voucher's usage count. */
  const readModels = async () => {
    const reads = SqliteReadStore.open(readsFile);
    try {
      const usage = await reads.get<{ id: string; usage_count: number }>('voucher_usage', 'v_1');
      return { checkpoint: await reads.getCheckpoint(CORE_CHECKPOINT), uses: usage?.usage_count ?? 0 };
    } finally {
      await reads.close();
    }
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'writer-groups-'));
    eventsFile = path.join(dir, 'events.db');
    readsFile = path.join(dir, 'read.db');
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers an append once the group has folded it: its read models and checkpoint are current when the append resolves', async function () {
    const store = open();
    const core = (await store.writerGroup(CORE_GROUP.name))!;
    expect(core, 'a handle').to.not.equal(undefined);
    // 2,000 events in one commit take the group tens of milliseconds to fold: an answer sent
    // before the fold would arrive long before it ends
    const events = [voucherCreated(), ...Array.from({ length: 1_999 }, (_, n) => applied(n))];
    const [result] = await store.appendToStreams([{ streamId: 'voucher-v_1', events }]);
    expect(core.checkpoint, 'the checkpoint in shared memory').to.equal(result!.position);
    expect(await readModels()).to.deep.equal({ checkpoint: result!.position, uses: 1_999 });
    // the next commit too, and a wait on it is answered at once
    const next = await store.appendToStream('voucher-v_1', [applied(2_000)]);
    expect(core.checkpoint).to.equal(next.position);
    expect((await readModels()).uses).to.equal(2_000);
  });

  it("answers a caller waiting on another connection's commit with a message from the thread", async function () {
    const store = open({ pollIntervalMs: 50 });
    const core = (await store.writerGroup(CORE_GROUP.name))!;
    await store.appendToStream('voucher-v_1', [voucherCreated()]);
    const other = SqliteEventStore.open<AnyEvent>(eventsFile, { writer: 'inline' });
    opened.push(other);
    const { position } = await other.appendToStream('voucher-v_1', [applied(1)]);
    expect(core.checkpoint, 'not folded yet: nobody handed it over').to.be.below(position);
    expect(await core.waitFor(position, 5_000), 'found by the poll, posted to the waiting caller').to.equal(true);
    expect((await readModels()).uses).to.equal(1);
  });

  it('a close leaves the group at the head of the log, the last commit folded', async function () {
    const store = open();
    await store.writerGroup(CORE_GROUP.name);
    await store.appendToStream('voucher-v_1', [voucherCreated()]);
    const pending = Array.from({ length: 20 }, (_, n) => store.appendToStream('voucher-v_1', [applied(n)]));
    const closing = store.close();
    await Promise.all(pending);
    await closing;
    const head = (await pending.at(-1)!).position;
    expect(await readModels()).to.deep.equal({ checkpoint: head, uses: 20 });
  });

  it('a writer thread that dies is replaced with its group, which goes on from its checkpoint', async function () {
    const store = open();
    const core = (await store.writerGroup(CORE_GROUP.name))!;
    await store.appendToStream('voucher-v_1', [voucherCreated(), applied(1)]);
    await workerOf(store)!.terminate();
    const { position } = await store.appendToStream('voucher-v_1', [applied(2)]);
    expect(core.checkpoint).to.equal(position);
    expect((await readModels()).uses).to.equal(2);
  });

  it('a group that cannot start fails its handle; appends are answered without it', async function () {
    fs.mkdirSync(readsFile); // a directory where the read store's file should be
    const store = open();
    let failure: unknown;
    await store.writerGroup(CORE_GROUP.name).catch((error: unknown) => (failure = error));
    expect(String(failure)).to.match(/projection groups on the writer thread/);
    await store.appendToStream('voucher-v_1', [voucherCreated()]);
    expect(await store.readStream('voucher-v_1')).to.have.length(1);
  });

  it('runs no group for a store that commits on the calling thread', async function () {
    const store = SqliteEventStore.open<AnyEvent>(eventsFile, {
      writer: 'inline',
      groupsOnWriter: {
        environment: 'sandbox',
        groups: [CORE_GROUP.name],
        readsFile,
        logLevel: 'silent',
        pollIntervalMs: 50,
      },
    });
    opened.push(store);
    expect(await store.writerGroup(CORE_GROUP.name)).to.equal(undefined);
    await store.appendToStream('voucher-v_1', [voucherCreated(), applied(1)]);
    expect(fs.existsSync(readsFile), 'nothing opened the read store').to.equal(false);
  });
});
