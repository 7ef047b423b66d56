/**
 * The analytics group on the projector thread (src/infrastructure/projector/projectorThread.ts):
 * fed the main thread's commits, it reports checkpoints; killed, it is replaced and catches up;
 * stopped, it ends. The HTTP analytics tests run it end to end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import type { Worker } from 'node:worker_threads';
import { ANALYTICS_GROUP } from '../../src/projections/index.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { ProjectorThread } from '../../src/infrastructure/projector/projectorThread.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { voucherApplied } from '../fixtures/events.ts';

const applied = (n: number) =>
  voucherApplied({
    voucherId: 'v_T',
    applicationId: `va_${n}`,
    code: 'T',
    orderId: `o${n}`,
    customerId: `c${n % 3}`,
    discountAmount: 1_000,
    finalAmount: 9_000,
    currency: 'USD',
  });

describe('ProjectorThread', function () {
  this.timeout(30_000);
  let dir: string;
  let events: SqliteEventStore;
  let thread: ProjectorThread | undefined;
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        lines.push(JSON.parse(line));
      },
    },
  );

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'projector-thread-'));
    events = SqliteEventStore.open(path.join(dir, 'events.db'), {
      onCommitted: (committed) => thread?.committed(committed),
    });
  });
  afterEach(async () => {
    await thread?.stop();
    thread = undefined;
    await events.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = (gatherMs = 0) =>
    ProjectorThread.start(
      {
        environment: 'sandbox',
        groups: [ANALYTICS_GROUP.name],
        eventsFile: path.join(dir, 'events.db'),
        readsFile: path.join(dir, 'read.db'),
        logLevel: 'silent',
        pollIntervalMs: 60_000, // no polling: only the handed-over commits (and catch-up reads) feed it
        gatherMs,
      },
      logger,
    );
  const usesOf = async () => {
    const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
    try {
      return (await reads.find<{ id: string; uses: number }>('analytics_daily', { voucher_id: 'v_T' })).reduce(
        (n, d) => n + d.uses,
        0,
      );
    } finally {
      await reads.close();
    }
  };

  it('folds what the main thread commits and reports the checkpoint writes wait for', async () => {
    await events.appendToStream('voucher-v_T', [applied(1)]); // before the thread: caught up on start
    thread = await start();
    const analytics = thread.group(ANALYTICS_GROUP.name);
    const { position } = await events.appendToStream('voucher-v_T', [applied(2), applied(3)]);
    expect(await analytics.waitFor(position, 10_000)).to.equal(true);
    expect(analytics.checkpoint).to.be.at.least(position);
    expect(await usesOf()).to.equal(3);
    expect(() => thread!.group('core')).to.throw(/no group named core/);
  });

  it('folds the commits of one gather window as one batch', async () => {
    thread = await start(400);
    const analytics = thread.group(ANALYTICS_GROUP.name);
    const posted: number[] = [];
    const worker = (thread as unknown as { thread: { worker: Worker } }).thread.worker;
    worker.on('message', (message: { type: string; position?: number }) => {
      if (message.type === 'checkpoint') posted.push(message.position!);
    });
    // the waiter makes the thread post the checkpoint of every batch its group writes
    const waiting = analytics.waitFor(3, 10_000);
    const positions: number[] = [];
    for (const n of [1, 2, 3]) positions.push((await events.appendToStream('voucher-v_T', [applied(n)])).position);
    expect(positions).to.deep.equal([1, 2, 3]);
    expect(await waiting).to.equal(true);
    expect(posted, 'three commits, one batch').to.deep.equal([3]);
    expect(await usesOf()).to.equal(3);
  });

  it('posts a checkpoint only while a caller waits on it; otherwise the checkpoint is read from shared memory', async () => {
    thread = await start();
    const analytics = thread.group(ANALYTICS_GROUP.name);
    const posted: number[] = [];
    const worker = (thread as unknown as { thread: { worker: Worker } }).thread.worker;
    worker.on('message', (message: { type: string; position?: number }) => {
      if (message.type === 'checkpoint') posted.push(message.position!);
    });
    const until = async (done: () => boolean) => {
      for (const deadline = Date.now() + 10_000; !done(); await new Promise((r) => setTimeout(r, 10)))
        if (Date.now() > deadline) throw new Error('timed out');
    };

    const first = await events.appendToStream('voucher-v_T', [applied(1)]);
    await until(() => analytics.checkpoint >= first.position);
    expect(posted, 'nobody waits: no message').to.deep.equal([]);

    const waiting = analytics.waitFor(first.position + 1, 10_000);
    const second = await events.appendToStream('voucher-v_T', [applied(2)]);
    expect(second.position).to.equal(first.position + 1);
    expect(await waiting).to.equal(true);
    expect(posted).to.deep.equal([second.position]);

    const third = await events.appendToStream('voucher-v_T', [applied(3)]);
    await until(() => analytics.checkpoint >= third.position);
    expect(posted, 'the waiter was answered: no more messages').to.deep.equal([second.position]);
    expect(await usesOf()).to.equal(3);
  });

  it('a thread that dies is replaced, which catches up from the checkpoint in the read store', async () => {
    thread = await start();
    const analytics = thread.group(ANALYTICS_GROUP.name);
    const first = await events.appendToStream('voucher-v_T', [applied(1)]);
    expect(await analytics.waitFor(first.position, 10_000)).to.equal(true);
    await (thread as unknown as { thread: { worker: Worker } }).thread.worker.terminate();
    const second = await events.appendToStream('voucher-v_T', [applied(2)]); // committed while no thread runs
    expect(await analytics.waitFor(second.position, 10_000)).to.equal(true);
    expect(await usesOf()).to.equal(2);
    expect(lines.some((l) => l.msg === 'projector thread ended; starting a new one')).to.equal(true);
  });

  it("takes commits the event store's writer thread forwards on a port, and again from a new thread after a restart", async () => {
    const store = SqliteEventStore.open(path.join(dir, 'events.db'), { startWriter: true }); // hands nothing over itself
    try {
      thread = await start(); // polls once a minute: only the forwarded commits can feed it within the test
      const current = thread;
      const analytics = current.group(ANALYTICS_GROUP.name);
      const feed = () => current.openFeed();
      expect(store.forwardCommits(feed)).to.equal(true);
      let restarted!: () => void;
      const restart = new Promise<void>((resolve) => (restarted = resolve));
      current.onRestart(() => {
        store.forwardCommits(feed);
        restarted();
      });
      const first = await store.appendToStream('voucher-v_T', [applied(1)]);
      expect(await analytics.waitFor(first.position, 10_000)).to.equal(true);
      await (current as unknown as { thread: { worker: Worker } }).thread.worker.terminate();
      await restart;
      const second = await store.appendToStream('voucher-v_T', [applied(2), applied(3)]);
      expect(await analytics.waitFor(second.position, 10_000)).to.equal(true);
      expect(await usesOf()).to.equal(3);
    } finally {
      await thread?.stop();
      thread = undefined;
      await store.close();
    }
  });

  it('a stop folds a commit nobody handed over (one still on its way on another port) before it ends', async () => {
    thread = await start();
    const analytics = thread.group(ANALYTICS_GROUP.name);
    const first = await events.appendToStream('voucher-v_T', [applied(1)]);
    expect(await analytics.waitFor(first.position, 10_000)).to.equal(true);
    // another store on the same file: its commit reaches the thread neither handed over nor forwarded,
    // and the thread's poll is a minute away
    const other = SqliteEventStore.open(path.join(dir, 'events.db'));
    const second = await other.appendToStream('voucher-v_T', [applied(2), applied(3)]);
    await other.close();
    await thread.stop();
    thread = undefined;
    const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
    try {
      expect(await reads.getCheckpoint(ANALYTICS_GROUP.checkpoint)).to.equal(second.position);
    } finally {
      await reads.close();
    }
    expect(await usesOf()).to.equal(3);
  });

  it('stop() releases waiters and ends the thread', async () => {
    thread = await start();
    const analytics = thread.group(ANALYTICS_GROUP.name);
    const waiting = analytics.waitFor(1_000_000, 10_000);
    const worker = (thread as unknown as { thread: { worker: Worker } }).thread.worker;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    await thread.stop();
    expect(await waiting).to.equal(false);
    await exited;
    thread = undefined;
  });
});
