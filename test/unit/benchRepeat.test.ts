/**
 * The open-loop bench's summary over repeated runs (scripts/bench/openLoopReport.ts,
 * repeatSummary): every judged target's ratio in each run, their median, in how many runs it was
 * met, and in how many runs every judged target was.
 */
import { expect } from 'chai';
import { repeatSummary, type OpenLoopVerdict } from '../../scripts/bench/openLoopReport.ts';

const judged = (
  target: OpenLoopVerdict['target'],
  percentile: OpenLoopVerdict['percentile'],
  max: number,
  ratio: number,
  verdict: OpenLoopVerdict['verdict'] = ratio <= max ? 'PASS' : 'MISS',
): OpenLoopVerdict => ({ target, percentile, max, fraction: 0.5, ratio, verdict });

const info = (
  target: OpenLoopVerdict['target'],
  percentile: OpenLoopVerdict['percentile'],
  ratio: number,
  fraction = 0.5,
  base?: OpenLoopVerdict['base'],
): OpenLoopVerdict => ({ target, percentile, max: null, fraction, ratio, verdict: 'INFO', ...(base ? { base } : {}) });

/** One run's verdicts: the three judged targets at half load, and lines that are information only. */
const run = (applyP99: number, applyP999: number, validateP99: number): OpenLoopVerdict[] => [
  { target: 'apply', percentile: 'p99', max: 2, fraction: 0.25, ratio: 1.1, verdict: 'INFO' },
  judged('apply', 'p99', 2, applyP99),
  judged('apply', 'p999', 3, applyP999),
  judged('validate', 'p99', 1, validateP99),
  info('durable', 'p99', 1.4, 0.5, 'bare'),
  info('durable', 'p999', 1.2, 0.5, 'bare'),
  info('apply', 'p99', 1.1, 0.5, 'durable'),
];
/** The durable route's ratios over the bare route's in a run. */
const withDurable = (verdicts: OpenLoopVerdict[], p99: number, p999: number): OpenLoopVerdict[] =>
  verdicts.map((v) =>
    v.target === 'durable' && v.fraction === 0.5 ? { ...v, ratio: v.percentile === 'p99' ? p99 : p999 } : v,
  );

describe('bench: the open-loop summary over repeated runs', () => {
  it('gives each judged target its ratio per run, their median and the runs that met it', () => {
    const lines = repeatSummary([run(1.62, 1.3, 0.64), run(2.41, 10.54, 0.93), run(1.85, 1.35, 0.67)]);
    expect(lines).to.deep.equal([
      "apply p99 / bare route's at 0.5× over 3 runs: 1.62×, 2.41×, 1.85× (median 1.85×); target ≤ 2×: met in 2 of 3",
      "  the durable route alone, p99 / bare route's: 1.40×, 1.40×, 1.40× (median 1.40×); above 2× in 0 of 3",
      "apply p99.9 / bare route's at 0.5× over 3 runs: 1.30×, 10.54×, 1.35× (median 1.35×); target ≤ 3×: met in 2 of 3",
      "  the durable route alone, p99.9 / bare route's: 1.20×, 1.20×, 1.20× (median 1.20×); above 3× in 0 of 3",
      "validate p99 / bare route's at 0.5× over 3 runs: 0.64×, 0.93×, 0.67× (median 0.67×); target ≤ 1×: met in 3 of 3",
      'every target met in 2 of 3 runs',
    ]);
  });

  it("counts the runs in which the durable route alone was above apply's target, at the same percentile", () => {
    const lines = repeatSummary([
      withDurable(run(2.6, 3.5, 0.6), 2.41, 3.6),
      run(1.7, 1.2, 0.6),
      withDurable(run(3.1, 1.9, 0.7), 2.9, 1.5),
    ]);
    expect(lines[1]).to.equal(
      "  the durable route alone, p99 / bare route's: 2.41×, 1.40×, 2.90× (median 2.41×); above 2× in 2 of 3",
    );
    expect(lines[3]).to.equal(
      "  the durable route alone, p99.9 / bare route's: 3.60×, 1.20×, 1.50× (median 1.50×); above 3× in 1 of 3",
    );
  });

  it('prints no durable line for a series without the durable route', () => {
    const lines = repeatSummary([run(1.5, 1.2, 0.6).filter((v) => v.target !== 'durable')]);
    expect(lines.some((l) => l.includes('durable route alone'))).to.equal(false);
  });

  it('counts an INVALID run as not met, and takes the mean of the middle two for an even count', () => {
    const invalid = run(1.2, 1.1, 0.5).map((v) => (v.verdict === 'PASS' ? { ...v, verdict: 'INVALID' as const } : v));
    const lines = repeatSummary([run(1.5, 1.2, 0.6), invalid]);
    expect(lines[0]).to.equal(
      "apply p99 / bare route's at 0.5× over 2 runs: 1.50×, 1.20× (median 1.35×); target ≤ 2×: met in 1 of 2",
    );
    expect(lines.at(-1)).to.equal('every target met in 1 of 2 runs');
  });

  it('includes service B’s targets of an A/B run', () => {
    const lines = repeatSummary([[...run(1.5, 1.2, 0.6), judged('apply-b', 'p99', 2, 2.5)]]);
    expect(lines).to.include(
      "apply-b p99 / bare route's at 0.5× over 1 runs: 2.50× (median 2.50×); target ≤ 2×: met in 0 of 1",
    );
    expect(lines.at(-1)).to.equal('every target met in 0 of 1 runs');
  });
});
