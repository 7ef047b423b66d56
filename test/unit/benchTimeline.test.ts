/**
 * The open-loop bench's --timeline (scripts/bench/timeline.ts): a round cut into stretches of
 * 100 ms by each request's scheduled time, the worst first, each with what the service's threads
 * did then, from readings of their run and wait times.
 */
import { expect } from 'chai';
import type { GcEvent } from '../../scripts/bench/gcTrace.ts';
import {
  STRETCH_MS,
  stretchLine,
  withCollections,
  worstStretches,
  type ThreadSample,
} from '../../scripts/bench/timeline.ts';

/** A reading at `at` ms: cumulative run times (ms) by thread, and the main thread's wait (ms). */
const sample = (at: number, run: Record<string, number>, mainWait: number): ThreadSample => ({
  at,
  run: new Map(Object.entries(run).map(([name, ms]) => [name, ms * 1e6])),
  mainWait: mainWait * 1e6,
});

describe('bench: the open-loop timeline of apply’s worst stretches', () => {
  // 100 req/s for 0.3 s: 10 requests per stretch; the second stretch holds the worst latency
  const latencies = [
    ...new Array<number>(10).fill(2),
    3,
    4,
    250,
    5,
    2,
    2,
    2,
    2,
    2,
    2,
    ...new Array<number>(10).fill(9),
  ];
  const t0 = 1_000;
  const samples = [
    sample(t0, { main: 0, 'snapshot-writer': 0, other: 0 }, 0),
    sample(t0 + 100, { main: 50, 'snapshot-writer': 1, other: 2 }, 5),
    sample(t0 + 200, { main: 130, 'snapshot-writer': 41, other: 7 }, 35),
    sample(t0 + 300, { main: 190, 'snapshot-writer': 42, other: 8 }, 40),
  ];

  it('orders the stretches by their worst latency, with the threads’ shares of a core in each', () => {
    const worst = worstStretches(latencies, 100, t0, samples, 2);
    expect(worst.map((s) => [s.fromMs, s.worstMs, s.requests])).to.deep.equal([
      [STRETCH_MS, 250, 10],
      [2 * STRETCH_MS, 9, 10],
    ]);
    const [first] = worst;
    expect(first!.mainRun).to.be.closeTo(0.8, 1e-9); // 80 ms of 100
    expect(first!.mainWait).to.be.closeTo(0.3, 1e-9);
    // the snapshot writer ran 40 ms of the 100; `other` 5 ms, under the 8 % at which a thread is named
    expect(first!.busy).to.deep.equal({ 'snapshot-writer': 0.4 });
    expect(stretchLine(2, first!)).to.equal(
      'round 3, 0.1 s: worst 250 ms; main runs 80 %, waits 30 %; snapshot-writer 40 %',
    );
  });

  it('without readings (not Linux), gives the stretches with no thread figures', () => {
    const [worst] = worstStretches(latencies, 100, t0, [], 1);
    expect(worst).to.deep.include({ fromMs: STRETCH_MS, worstMs: 250, mainRun: 0, mainWait: 0, busy: {} });
    expect(stretchLine(0, worst!)).to.equal('round 1, 0.1 s: worst 250 ms; main runs 0 %, waits 0 %');
  });

  it('with the GC trace, names the main thread’s collections that ended in each stretch', () => {
    const worst = worstStretches(latencies, 100, t0, samples, 2); // stretches from 100 and 200 ms
    const gc = (kind: string, atMs: number, pauseMs: number): GcEvent => ({ kind, atMs, pauseMs, promoted: 0 });
    // the round started at 5,000 ms on the trace's clock: the first stretch is [5,100, 5,200)
    const events = [
      gc('s', 5_099, 9), // before it
      gc('s', 5_100, 2.5),
      gc('mc', 5_150, 8.75),
      gc('s', 5_199, 1.5),
      gc('mmc', 5_160, 1), // neither a scavenge nor a full collection
      gc('s', 5_200, 4), // the next stretch
    ];
    const [first, second] = withCollections(worst, events, 5_000);
    expect(first!.gc).to.deep.equal({ scavenges: 2, scavengeMs: 4, full: 1, fullMs: 8.75 });
    expect(second!.gc).to.deep.equal({ scavenges: 1, scavengeMs: 4, full: 0, fullMs: 0 });
    expect(stretchLine(2, first!)).to.equal(
      'round 3, 0.1 s: worst 250 ms; main runs 80 %, waits 30 %; snapshot-writer 40 %;' +
        " main thread's GC: 2 scavenges (4.0 ms), 1 full (8.8 ms)",
    );
    expect(stretchLine(2, second!)).to.match(/; main thread's GC: 1 scavenge \(4\.0 ms\)$/);
    const [quiet] = withCollections(worst, [], 5_000);
    expect(stretchLine(2, quiet!)).to.match(/; main thread's GC: 0 scavenges$/);
  });
});
