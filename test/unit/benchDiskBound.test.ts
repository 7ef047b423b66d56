/**
 * The open-loop bench's note on runs whose disk alone missed apply's targets
 * (scripts/bench/openLoopReport.ts, diskBoundNotes): the durable route, the bare route answering
 * once each body is synced, is the least a durable apply waits; when its percentile over the bare
 * route's is above apply's target, the run says so, with apply's percentile over the durable route's.
 */
import { expect } from 'chai';
import { diskBoundNotes, type OpenLoopRow, type OpenLoopVerdict } from '../../scripts/bench/openLoopReport.ts';

const row = (fraction: number, rate: number) => ({ fraction, rate }) as OpenLoopRow;
const rows = [row(0.25, 679), row(0.5, 1359)];

/** A run's verdicts at one fraction: apply's judged targets, and the disk's shares for information. */
const verdictsAt = (
  fraction: number,
  durableOverBare: { p99: number; p999: number },
  applyOverDurable: { p99: number; p999: number },
): OpenLoopVerdict[] => {
  const judged = fraction === 0.5;
  const verdict = (ratio: number, max: number) => (!judged ? 'INFO' : ratio <= max ? 'PASS' : 'MISS');
  const applyP99 = durableOverBare.p99 * applyOverDurable.p99;
  const applyP999 = durableOverBare.p999 * applyOverDurable.p999;
  return [
    { target: 'apply', percentile: 'p99', max: 2, fraction, ratio: applyP99, verdict: verdict(applyP99, 2) },
    { target: 'apply', percentile: 'p999', max: 3, fraction, ratio: applyP999, verdict: verdict(applyP999, 3) },
    { target: 'validate', percentile: 'p99', max: 1, fraction, ratio: 3, verdict: verdict(3, 1) },
    {
      target: 'durable',
      percentile: 'p99',
      base: 'bare',
      max: null,
      fraction,
      ratio: durableOverBare.p99,
      verdict: 'INFO',
    },
    {
      target: 'durable',
      percentile: 'p999',
      base: 'bare',
      max: null,
      fraction,
      ratio: durableOverBare.p999,
      verdict: 'INFO',
    },
    {
      target: 'apply',
      percentile: 'p99',
      base: 'durable',
      max: null,
      fraction,
      ratio: applyOverDurable.p99,
      verdict: 'INFO',
    },
    {
      target: 'apply',
      percentile: 'p999',
      base: 'durable',
      max: null,
      fraction,
      ratio: applyOverDurable.p999,
      verdict: 'INFO',
    },
  ];
};

describe('bench: a run whose disk alone missed apply’s targets', () => {
  it('notes each judged target the durable route missed, with what the service added over it', () => {
    const verdicts = [
      ...verdictsAt(0.25, { p99: 2.5, p999: 3.5 }, { p99: 1, p999: 1 }), // not judged at a quarter
      ...verdictsAt(0.5, { p99: 2.34, p999: 2.1 }, { p99: 1.18, p999: 1.24 }),
    ];
    expect(diskBoundNotes(verdicts, rows)).to.deep.equal([
      "note: at 1359 req/s the durable route alone had a p99 of 2.34× the bare route's, above apply's target of 2×:" +
        " no apply answered once its commit is synced could meet it in this run (apply's p99 was 1.18× the durable route's)",
    ]);
  });

  it('says nothing when the durable route stayed within the targets', () => {
    expect(diskBoundNotes(verdictsAt(0.5, { p99: 1.32, p999: 1.28 }, { p99: 2.8, p999: 2.2 }), rows)).to.deep.equal([]);
  });

  it('notes service B’s targets too, each with its own share over the durable route', () => {
    const verdicts = verdictsAt(0.5, { p99: 1.5, p999: 3.4 }, { p99: 1.5, p999: 1.1 });
    verdicts.push(
      { target: 'apply-b', percentile: 'p999', max: 3, fraction: 0.5, ratio: 4.5, verdict: 'MISS' },
      {
        target: 'apply-b',
        percentile: 'p999',
        base: 'durable',
        max: null,
        fraction: 0.5,
        ratio: 1.32,
        verdict: 'INFO',
      },
    );
    const notes = diskBoundNotes(verdicts, rows);
    expect(notes).to.have.length(2);
    expect(notes[0]).to.match(
      /a p99\.9 of 3\.40× the bare route's, above apply's target of 3×.*\(apply's p99\.9 was 1\.10×/,
    );
    expect(notes[1]).to.match(/above apply-b's target of 3×.*\(apply-b's p99\.9 was 1\.32× the durable route's\)$/);
  });
});
