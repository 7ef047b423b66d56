/**
 * The open-loop bench's A/B comparison (scripts/bench/openLoopReport.ts): B over A at each rate of
 * one run (bOverA, bOverALine), and over the runs of `--repeat` (abRepeatSummary), where an
 * INVALID run's latencies are shown but left out of the median and the threads' CPU is not.
 */
import { expect } from 'chai';
import {
  abRepeatSummary,
  bOverA,
  bOverALine,
  type BOverA,
  type OpenLoopRow,
} from '../../scripts/bench/openLoopReport.ts';

const row = (
  fraction: number,
  id: OpenLoopRow['target']['id'],
  latency: { p50: number; p99: number; p999: number },
  threads: Record<string, number> | null = null,
  capHit = false,
) =>
  ({
    fraction,
    rate: fraction * 2000,
    target: { id, title: id },
    result: { latency, capHit },
    threadUsPerRequest: threads,
  }) as unknown as OpenLoopRow;

describe('bench: B over A in an A/B open-loop run', () => {
  it("divides B's percentiles by A's for validate and apply, and apply's threads that both took 5 µs or more in", () => {
    const rows = [
      row(0.5, 'bare', { p50: 1, p99: 10, p999: 20 }),
      row(0.5, 'validate', { p50: 1, p99: 8, p999: 16 }),
      row(0.5, 'validate-b', { p50: 1.1, p99: 6, p999: 24 }),
      row(0.5, 'apply', { p50: 4, p99: 40, p999: 80 }, { main: 500, 'snapshot-writer': 45, other: 4, gone: 30 }),
      row(0.5, 'apply-b', { p50: 5, p99: 30, p999: 160 }, { main: 450, 'snapshot-writer': 30, other: 8 }),
    ];
    const [ab, ...more] = bOverA(rows);
    expect(more).to.deep.equal([]);
    expect(ab!.rate).to.equal(1000);
    expect(ab!.invalid).to.equal(false);
    expect(ab!.applyThreads).to.deep.equal({ main: 0.9, 'snapshot-writer': 30 / 45 });
    expect(bOverALine(ab!)).to.equal(
      'B over A at 1000 req/s (0.5×): validate p50 1.10×, p99 0.75×, p99.9 1.50×; apply p50 1.25×, p99 0.75×, p99.9 2.00×',
    );
  });

  it('gives nothing without a B, and marks a rate where the generator reached its cap', () => {
    expect(bOverA([row(0.5, 'apply', { p50: 1, p99: 2, p999: 3 })])).to.deep.equal([]);
    const capped = bOverA([
      row(0.5, 'apply', { p50: 1, p99: 2, p999: 3 }),
      row(0.5, 'apply-b', { p50: 1, p99: 2, p999: 3 }, null, true),
    ]);
    expect(capped.map((ab) => ab.invalid)).to.deep.equal([true]);
  });
});

const ab = (applyP99: number, applyP999: number, threads: Record<string, number>, invalid = false): BOverA[] => [
  {
    fraction: 0.5,
    rate: 1000,
    latency: { apply: { p50: 1, p99: applyP99, p999: applyP999 } },
    applyThreads: threads,
    invalid,
  },
];

describe('bench: B over A over repeated runs', () => {
  it('lists each run, brackets an INVALID one, and takes the median over the valid runs only', () => {
    const lines = abRepeatSummary([
      ab(1.05, 1.94, { main: 1.04, 'snapshot-writer': 1.52 }),
      ab(0.45, 0.48, { main: 0.96, 'snapshot-writer': 1.57 }, true),
      ab(1.2, 1.6, { main: 0.98, 'snapshot-writer': 1.41 }),
      ab(0.85, 0.42, { main: 1.02, 'snapshot-writer': 1.39 }),
    ]);
    expect(lines).to.deep.equal([
      'B over A, apply p99 at 0.5× over 4 runs: 1.05×, [0.45×], 1.20×, 0.85× (median of the 3 valid 1.05×)',
      'B over A, apply p99.9 at 0.5× over 4 runs: 1.94×, [0.48×], 1.60×, 0.42× (median of the 3 valid 1.60×)',
      "B over A, apply's CPU per answered request by thread at 0.5×, median: main 1.00× (0.96–1.04, 4 runs), snapshot-writer 1.46× (1.39–1.57, 4 runs)",
    ]);
  });

  it('says so when no run was valid, and prints nothing for runs without a B', () => {
    expect(abRepeatSummary([ab(2, 3, {}, true)])).to.deep.equal([
      'B over A, apply p99 at 0.5× over 1 runs: [2.00×] (no valid run)',
      'B over A, apply p99.9 at 0.5× over 1 runs: [3.00×] (no valid run)',
    ]);
    expect(abRepeatSummary([[], []])).to.deep.equal([]);
  });
});
