/**
 * The open-loop bench's closed loop with a service B (scripts/bench/openLoopRun.ts): validate and
 * apply are measured in two passes, A first and then B first, and each target keeps the mean of
 * its passes.
 */
import { expect } from 'chai';
import type { Measured } from '../../scripts/bench/load.ts';
import { closedLoopPasses, meanOfPasses } from '../../scripts/bench/openLoopRun.ts';

const pass = (reqPerSec: number, extra: Partial<Measured> = {}): Measured => ({
  id: 'apply',
  title: 'apply',
  reqPerSec,
  p50: reqPerSec / 1_000,
  p99: reqPerSec / 100,
  total: reqPerSec * 5,
  ok2xx: reqPerSec * 5,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  ceilingReqPerSec: 8_000,
  ratio: reqPerSec / 8_000,
  target: null,
  verdict: 'INFO',
  serverCpu: 1.2,
  loadGenCpu: 0.4,
  otherCpu: 0.02,
  serverCpuMsPerReq: 0.5,
  threadCpuMsPerReq: { main: 0.3, 'sqlite-writer': 0.1 },
  cpuRatio: 0.4,
  ...extra,
});

describe('bench: the closed loop of an open-loop A/B run', () => {
  it('measures A before B in the first pass and B before A in the second, every target of A and B in each', () => {
    const [first, second, ...more] = closedLoopPasses(true);
    expect(more).to.have.length(0);
    const before = (order: string[], x: string, y: string) => order.indexOf(x) < order.indexOf(y);
    expect(before(first!, 'apply', 'apply-b') && before(first!, 'validate', 'validate-b')).to.equal(true);
    expect(before(second!, 'apply-b', 'apply') && before(second!, 'validate-b', 'validate')).to.equal(true);
    expect([...second!].sort()).to.deep.equal(['apply', 'apply-b', 'validate', 'validate-b']);
    // the bare route and the durable route once, before the others
    expect(first!.slice(0, 2)).to.deep.equal(['bare', 'durable']);
    expect(second).not.to.include('bare');
  });

  it('measures every target once, in one pass, without B', () => {
    expect(closedLoopPasses(false)).to.deep.equal([['bare', 'durable', 'validate', 'apply']]);
  });

  it('keeps the mean of the passes, sums the counts and lists each pass', () => {
    const merged = meanOfPasses([
      pass(3_000, { threadCpuMsPerReq: { main: 0.3, 'sqlite-writer': 0.1 } }),
      pass(4_000, { threadCpuMsPerReq: { main: 0.5, other: 0.02 }, otherCpu: null }),
    ]);
    expect(merged.reqPerSec).to.equal(3_500);
    expect(merged.ratio).to.be.closeTo(3_500 / 8_000, 1e-12);
    expect(merged.p99).to.be.closeTo(35, 1e-12);
    expect(merged.total).to.equal(35_000);
    expect(merged.passes).to.deep.equal([3_000, 4_000]);
    expect(merged.otherCpu).to.equal(null); // not known in one pass: not known
    expect(merged.threadCpuMsPerReq!.main).to.be.closeTo(0.4, 1e-12);
    expect(merged.threadCpuMsPerReq!['sqlite-writer']).to.be.closeTo(0.05, 1e-12);
    expect(merged.threadCpuMsPerReq!.other).to.be.closeTo(0.01, 1e-12);
  });

  it('gives a single pass back as it is', () => {
    const only = pass(2_000);
    expect(meanOfPasses([only])).to.equal(only);
    expect(() => meanOfPasses([])).to.throw(/no pass/);
  });
});
