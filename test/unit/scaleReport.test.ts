/** The scale bench's pure figures (scripts/bench/scaleReport.ts): segments, drift, disk, replay output, verdicts. */
import { expect } from 'chai';
import {
  diskReport,
  p99Of,
  parseReplayOutput,
  phaseReport,
  segmentSizes,
  verdicts,
  type SegmentRun,
} from '../../scripts/bench/scaleReport.ts';

const run = (overrides: Partial<SegmentRun> = {}): SegmentRun => ({
  requests: 1_000,
  ok2xx: 1_000,
  failures: 0,
  seconds: 1,
  p99Ms: 10,
  rssBytes: 100 * 2 ** 20,
  ...overrides,
});

describe('scale bench report', () => {
  it('splits the applications into ten segments, the last taking the remainder', () => {
    expect(segmentSizes(1_000_000)).to.deep.equal(Array(10).fill(100_000));
    expect(segmentSizes(1_005)).to.deep.equal([100, 100, 100, 100, 100, 100, 100, 100, 100, 105]);
    expect(segmentSizes(3)).to.deep.equal([1, 1, 1]);
    expect(() => segmentSizes(0)).to.throw(/positive integer/);
  });

  it('counts applications cumulatively and takes the drift of the last segment from the first', () => {
    const report = phaseReport('spread', '1,000 vouchers', [
      run({ requests: 2_000, ok2xx: 2_000, seconds: 1, p99Ms: 40 }),
      run({ requests: 2_000, ok2xx: 1_990, failures: 10, seconds: 2, p99Ms: 50, rssBytes: 300 * 2 ** 20 }),
      run({ requests: 2_000, ok2xx: 2_000, seconds: 1.25, p99Ms: 60, rssBytes: null }),
    ]);
    expect(report.segments.map((s) => s.upTo)).to.deep.equal([2_000, 3_990, 5_990]);
    expect(report.segments.map((s) => s.reqPerSec)).to.deep.equal([2_000, 1_000, 1_600]);
    expect(report.throughputDrift).to.be.closeTo(-0.2, 1e-9);
    expect(report.p99Drift).to.be.closeTo(0.5, 1e-9);
    expect(report.peakRssMb).to.equal(300);
    expect(report.failures).to.equal(10);
  });

  it('takes the p99 of all the answers of a segment by nearest rank, in any order', () => {
    // 1..200 ms shuffled: the 198th value is the smallest with 99 % at or under it
    const latencies = Array.from({ length: 200 }, (_, i) => ((i * 37) % 200) + 1);
    expect(p99Of(latencies)).to.equal(198);
    expect(p99Of([...Array<number>(99).fill(1), 250])).to.equal(1);
    expect(p99Of([...Array<number>(98).fill(1), 250, 300])).to.equal(250);
    expect(p99Of([3.5])).to.equal(3.5);
    expect(p99Of([])).to.equal(0);
  });

  it('reports no drift for a single segment', () => {
    const report = phaseReport('hot', 'one voucher', [run({ reference: { reqPerSec: 1_000, p99Ms: 10 } })]);
    expect(report.throughputDrift).to.equal(null);
    expect(report.p99Drift).to.equal(null);
    expect(report.throughputDriftVsReference).to.equal(null);
    expect(report.p99DriftVsReference).to.equal(null);
  });

  it('takes each segment relative to its reference round: the machine slowing down cancels out, history does not', () => {
    // the machine 20 % slower at the end (the reference too), the service no slower than it
    const machine = phaseReport('spread', 's', [
      run({ requests: 2_000, p99Ms: 40, reference: { reqPerSec: 2_500, p99Ms: 30 } }),
      run({ requests: 1_600, p99Ms: 50, reference: { reqPerSec: 2_000, p99Ms: 37.5 } }),
    ]);
    expect(machine.throughputDrift).to.be.closeTo(-0.2, 1e-9);
    expect(machine.p99Drift).to.be.closeTo(0.25, 1e-9);
    expect(machine.throughputDriftVsReference).to.be.closeTo(0, 1e-9);
    expect(machine.p99DriftVsReference).to.be.closeTo(0, 1e-9);
    expect(machine.segments.map((s) => s.reference)).to.deep.equal([
      { reqPerSec: 2_500, p99Ms: 30 },
      { reqPerSec: 2_000, p99Ms: 37.5 },
    ]);
    // the same machine throughout, the service 20 % slower and its p99 30 % worse: all of it stays
    const history = phaseReport('spread', 's', [
      run({ requests: 2_000, p99Ms: 40, reference: { reqPerSec: 2_500, p99Ms: 30 } }),
      run({ requests: 1_600, p99Ms: 52, reference: { reqPerSec: 2_500, p99Ms: 30 } }),
    ]);
    expect(history.throughputDriftVsReference).to.be.closeTo(-0.2, 1e-9);
    expect(history.p99DriftVsReference).to.be.closeTo(0.3, 1e-9);
    expect(verdicts({ phases: [machine], firstApplyMs: null, replayEventsPerSec: null })).to.include({
      throughputDrift: 'MISS',
      p99Drift: 'MISS',
      throughputDriftVsReference: 'PASS',
      p99DriftVsReference: 'PASS',
    });
    expect(verdicts({ phases: [machine, history], firstApplyMs: null, replayEventsPerSec: null })).to.include({
      throughputDriftVsReference: 'MISS',
      p99DriftVsReference: 'MISS',
    });
    // a reference round missing at either end: no relative drift
    const partial = phaseReport('hot', 'h', [run(), run({ reference: { reqPerSec: 1_000, p99Ms: 10 } })]);
    expect(partial.p99DriftVsReference).to.equal(null);
  });

  it('gives each file its bytes per application, largest first, without empty files', () => {
    const disk = diskReport(
      [
        { file: 'sandbox/read.db', bytes: 1_000 },
        { file: 'sandbox/events.db', bytes: 3_000 },
        { file: 'service.lock', bytes: 0 },
      ],
      10,
    );
    expect(disk.files).to.deep.equal([
      { file: 'sandbox/events.db', bytes: 3_000, bytesPerApplication: 300 },
      { file: 'sandbox/read.db', bytes: 1_000, bytesPerApplication: 100 },
    ]);
    expect(disk.totalBytes).to.equal(4_000);
    expect(disk.bytesPerApplication).to.equal(400);
  });

  it("reads the events and milliseconds of every environment from replay's output", () => {
    const output = [
      'Rebuilding read models (core: vouchers; analytics: analytics) in /tmp/x',
      '  sandbox core group: 50000 events folded in 700 ms',
      'sandbox: replayed 50000 events (up to position 50000) in 1000 ms',
      'production: replayed 10000 events (up to position 10000) in 1000 ms',
      '',
      'Summary',
    ].join('\n');
    expect(parseReplayOutput(output)).to.deep.equal({ events: 60_000, ms: 2_000, eventsPerSec: 30_000 });
    expect(parseReplayOutput('production: no event store at x, skipped\n').eventsPerSec).to.equal(null);
  });

  it('passes or misses each target, and says n/a for what was not measured', () => {
    const steady = phaseReport('spread', 's', [run(), run({ requests: 950, p99Ms: 11, rssBytes: 290 * 2 ** 20 })]);
    expect(verdicts({ phases: [steady], firstApplyMs: 49, replayEventsPerSec: 50_000 })).to.deep.equal({
      rss: 'PASS',
      throughputDrift: 'PASS',
      p99Drift: 'PASS',
      throughputDriftVsReference: 'n/a',
      p99DriftVsReference: 'n/a',
      firstApply: 'PASS',
      replay: 'PASS',
    });
    const growing = phaseReport('hot', 'h', [run(), run({ requests: 890, p99Ms: 11.5, rssBytes: 301 * 2 ** 20 })]);
    expect(verdicts({ phases: [steady, growing], firstApplyMs: 50, replayEventsPerSec: 49_999 })).to.deep.equal({
      rss: 'MISS',
      throughputDrift: 'MISS',
      p99Drift: 'MISS',
      throughputDriftVsReference: 'n/a',
      p99DriftVsReference: 'n/a',
      firstApply: 'MISS',
      replay: 'MISS',
    });
    expect(verdicts({ phases: [], firstApplyMs: null, replayEventsPerSec: null })).to.deep.equal({
      rss: 'n/a',
      throughputDrift: 'n/a',
      p99Drift: 'n/a',
      throughputDriftVsReference: 'n/a',
      p99DriftVsReference: 'n/a',
      firstApply: 'n/a',
      replay: 'n/a',
    });
  });
});
