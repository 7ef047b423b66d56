/**
 * The pacer holds the webhook publisher's next batch back while the request thread is saturated,
 * for at most WEBHOOK_MAX_DEFER_MS after the batch's oldest event, and never a batch a request
 * waits for; the main thread's load is shared with worker threads through a SharedArrayBuffer.
 */
import { expect } from 'chai';
import { Worker } from 'node:worker_threads';
import { BUSY_ABOVE, PACE_STEP_MS, Pacer } from '../../src/application/webhooks/pacer.ts';
import { LOAD_SAMPLE_MS, loadReader, mainThreadLoad } from '../../src/infrastructure/mainThreadLoad.ts';

const T0 = Date.parse('2026-03-01T00:00:00Z');

/** A pacer on a clock that moves only when the pacer sleeps, with the load a test sets. */
const paced = (maxDeferMs: number, load: (now: number) => number) => {
  let now = T0;
  const sleeps: number[] = [];
  const pacer = new Pacer({
    load: () => load(now),
    maxDeferMs,
    clock: { now: () => new Date(now) },
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
  });
  return { pacer, sleeps, at: () => now };
};

describe('webhook pacer', () => {
  it('lets a batch through at once while the request thread is not saturated', async () => {
    const { pacer, sleeps } = paced(5_000, () => BUSY_ABOVE);
    expect(await pacer.wait(T0, 0)).to.equal(0);
    expect(sleeps).to.deep.equal([]);
  });

  it('holds a batch back while the load is above the bar, until it falls', async () => {
    const { pacer, sleeps } = paced(5_000, (now) => (now < T0 + 100 ? 0.95 : 0.5));
    expect(await pacer.wait(T0, 0)).to.equal(100);
    expect(sleeps).to.deep.equal([PACE_STEP_MS, PACE_STEP_MS, PACE_STEP_MS, PACE_STEP_MS]);
  });

  it('holds a batch back no longer than the longest deferral after its oldest event', async () => {
    const { pacer, at } = paced(1_000, () => 1);
    // the oldest event is already 990 ms old: 10 ms more at most
    expect(await pacer.wait(T0 - 990, 0)).to.equal(10);
    expect(at()).to.equal(T0 + 10);
    // older than that: not held at all
    expect(await pacer.wait(T0 - 5_000, 0)).to.equal(0);
  });

  it('never holds back a batch a request waits for, nor any batch once stopped, nor with deferral off', async () => {
    const busy = paced(5_000, () => 1);
    busy.pacer.hurry(120);
    expect(await busy.pacer.wait(T0, 100)).to.equal(0); // the publisher is at 100, a request waits for 120
    expect(await busy.pacer.wait(T0, 120)).to.equal(5_000); // reached: held back again
    busy.pacer.stop();
    expect(await busy.pacer.wait(busy.at(), 200)).to.equal(0);
    expect(await paced(0, () => 1).pacer.wait(T0, 0)).to.equal(0);
  });

  it('ends a wait that is under way when stopped', async () => {
    const { pacer, sleeps } = paced(5_000, () => 1);
    const waiting = pacer.wait(T0, 0);
    // each sleep of the fake clock resolves at once; stop after three of them
    while (sleeps.length < 3) await Promise.resolve();
    pacer.stop();
    expect(await waiting).to.be.at.most(4 * PACE_STEP_MS);
  });
});

describe('the main thread’s load, shared with worker threads', () => {
  const read = loadReader(mainThreadLoad());
  const sampled = () => new Promise((resolve) => setTimeout(resolve, LOAD_SAMPLE_MS * 3));

  it('is near 1 right after the event loop was kept busy, and near 0 after it waited', async () => {
    await sampled();
    const busyUntil = Date.now() + LOAD_SAMPLE_MS * 10;
    while (Date.now() < busyUntil); // the event loop never waits: no timer can run
    // the sample taken as soon as the loop runs again covers the busy stretch; it stands until the next one
    let busy = 0;
    const lookUntil = Date.now() + LOAD_SAMPLE_MS * 0.8;
    while (Date.now() < lookUntil) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      busy = Math.max(busy, read());
    }
    await sampled();
    const idle = read();
    expect(busy).to.be.above(BUSY_ABOVE);
    expect(idle).to.be.below(0.5);
  });

  it('is read by a worker thread from the same buffer', async () => {
    const buffer = mainThreadLoad();
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       parentPort.postMessage(Atomics.load(new Int32Array(workerData), 0));`,
      { eval: true, workerData: buffer },
    );
    const seen = await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(seen / 1_000).to.be.closeTo(read(), 0.2);
    expect(() => mainThreadLoad()).to.not.throw();
  });
});
