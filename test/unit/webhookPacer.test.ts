/**
 * The pacer holds the webhook publisher's next batch back while the request thread is saturated,
 * for at most WEBHOOK_MAX_DEFER_MS after the batch's oldest event, and never a batch a request
 * waits for; while the request thread is saturated and waits for a CPU, the webhook thread rests in
 * turns; the main thread's load and wait are shared with worker threads through a SharedArrayBuffer.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { Worker } from 'node:worker_threads';
import {
  BREATH_MS,
  BREATHE_EVERY_MS,
  BUSY_ABOVE,
  PACE_STEP_MS,
  Pacer,
  WAITING_ABOVE,
} from '../../src/application/webhooks/pacer.ts';
import {
  LOAD_SAMPLE_MS,
  loadReader,
  mainThreadLoad,
  schedstat,
  waitReader,
} from '../../src/infrastructure/mainThreadLoad.ts';

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

describe('webhook pacer: rests of the webhook thread', () => {
  /** A pacer whose load and wait a test sets, recording each time it blocks the thread. */
  const resting = (load: number, waiting: number | undefined) => {
    const blocked: number[] = [];
    const pacer = new Pacer({
      load: () => load,
      waiting: waiting === undefined ? undefined : () => waiting,
      block: (ms) => void blocked.push(ms),
      maxDeferMs: 5_000,
      clock: { now: () => new Date(T0) },
    });
    return { pacer, blocked };
  };

  it('rests while the request thread is saturated and waits for a CPU', () => {
    const { pacer, blocked } = resting(0.9, 0.1);
    expect(pacer.contended()).to.equal(true);
    expect(pacer.breathe(0)).to.equal(BREATH_MS);
    expect(pacer.breathe(0)).to.equal(BREATH_MS);
    expect(blocked).to.deep.equal([BREATH_MS, BREATH_MS]);
  });

  it('does not rest when the request thread is saturated but gets a CPU, or waits but is not saturated', () => {
    for (const [load, waiting] of [
      [0.95, WAITING_ABOVE],
      [0.95, 0],
      [BUSY_ABOVE, 0.3],
      [0.2, 0.3],
    ] as const) {
      const { pacer, blocked } = resting(load, waiting);
      expect(pacer.contended(), `load ${load}, waiting ${waiting}`).to.equal(false);
      expect(pacer.breathe(0), `load ${load}, waiting ${waiting}`).to.equal(0);
      expect(blocked).to.deep.equal([]);
    }
  });

  it('never rests while a request waits for the publisher, once stopped, or without a wait to read', () => {
    const hurried = resting(1, 1);
    hurried.pacer.hurry(50);
    expect(hurried.pacer.breathe(40)).to.equal(0); // a request waits for position 50
    expect(hurried.pacer.breathe(50)).to.equal(BREATH_MS); // reached
    hurried.pacer.stop();
    expect(hurried.pacer.contended()).to.equal(false);
    expect(hurried.pacer.breathe(50)).to.equal(0);
    expect(hurried.blocked).to.deep.equal([BREATH_MS]);
    const blind = resting(1, undefined);
    expect(blind.pacer.contended()).to.equal(false);
    expect(blind.pacer.breathe(0)).to.equal(0);
    expect(blind.blocked).to.deep.equal([]);
  });
});

describe('webhook pacer: resting in turns on timers', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(() => clock.restore());

  it('rests every few milliseconds while contended and working, stops between, and starts again', () => {
    let load = 0.95;
    let working = true;
    const blocked: number[] = [];
    const pacer = new Pacer({
      load: () => load,
      waiting: () => 0.1,
      block: (ms) => void blocked.push(ms),
      maxDeferMs: 5_000,
      clock: { now: () => new Date(T0) },
    });
    const stop = pacer.restInTurns(
      () => working,
      () => 0,
      100,
    );
    clock.tick(99);
    expect(blocked).to.have.length(0); // nothing before the first look
    clock.tick(1 + 10 * BREATHE_EVERY_MS);
    expect(blocked).to.have.length(10);
    load = 0.5; // the request thread no longer saturated: no rest after the next look
    clock.tick(100);
    const quiet = blocked.length;
    clock.tick(500);
    expect(blocked).to.have.length(quiet);
    load = 0.95; // saturated again: rests again from the next look on
    clock.tick(100 + 10 * BREATHE_EVERY_MS);
    expect(blocked.length - quiet).to.be.at.least(10);
    working = false; // no endpoint enabled: no rest
    clock.tick(100);
    const idle = blocked.length;
    clock.tick(500);
    expect(blocked).to.have.length(idle);
    working = true;
    clock.tick(100 + BREATHE_EVERY_MS);
    expect(blocked.length).to.be.above(idle);
    stop();
    const stopped = blocked.length;
    clock.tick(1_000);
    expect(blocked).to.have.length(stopped);
    expect(new Set(blocked)).to.deep.equal(new Set([BREATH_MS]));
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

  it('reads the thread’s time on a CPU and waiting for one where Linux keeps them, as a share of the time', async () => {
    const before = schedstat();
    if (process.platform !== 'linux') {
      expect(before).to.equal(undefined); // elsewhere: no such statistics, and the load is the event loop's
      return;
    }
    const busyUntil = Date.now() + 50;
    while (Date.now() < busyUntil);
    const after = schedstat()!;
    const elapsed = after.atNs - before!.atNs;
    // at least most of the 50 ms busy stretch on a CPU; run and wait never more than the time passed
    expect(after.runNs - before!.runNs).to.be.above(25e6);
    expect(after.runNs - before!.runNs + after.waitNs - before!.waitNs).to.be.at.most(elapsed * 1.05);
    await sampled();
    const waited = waitReader(mainThreadLoad())();
    expect(waited).to.be.at.least(0);
    expect(waited).to.be.at.most(1);
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
