/**
 * The bench's closed-loop scenarios and their failed answers: the service the bench starts lifts
 * the quota of outstanding quotes (scripts/bench/scenarios.ts), and the report warns of every
 * scenario with failed answers, targets or not (scripts/bench/report.ts).
 */
import { expect } from 'chai';
import { quotasFrom } from '../../src/config.ts';
import { DEFAULT_QUOTAS } from '../../src/application/quotas.ts';
import type { Measured } from '../../scripts/bench/load.ts';
import { failedAnswerLines } from '../../scripts/bench/report.ts';
import { serviceEnv } from '../../scripts/bench/scenarios.ts';

const row = (id: string, extra: Partial<Measured> = {}): Measured => ({
  id,
  title: id,
  reqPerSec: 2_000,
  p50: 5,
  p99: 40,
  total: 10_000,
  ok2xx: 10_000,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  ceilingReqPerSec: 4_000,
  ratio: 0.5,
  target: null,
  verdict: 'INFO',
  serverCpu: 1,
  loadGenCpu: 0.3,
  otherCpu: 0,
  serverCpuMsPerReq: 0.5,
  threadCpuMsPerReq: null,
  cpuRatio: 0.5,
  ...extra,
});

describe('bench: failed answers in the closed loop', () => {
  it('starts the service with a quota of outstanding quotes no run reaches, the other settings kept', () => {
    const env = serviceEnv(4100, '/tmp/data', { LOG_LEVEL: 'info' });
    const quotas = quotasFrom(env);
    // validate-quote keeps a quote per request: a run sends hundreds of thousands
    expect(quotas.outstandingQuotes).to.be.at.least(100_000_000);
    expect(quotas.pendingExports).to.equal(DEFAULT_QUOTAS.pendingExports);
    expect(env.LOG_LEVEL).to.equal('info');
    expect(env.DATA_DIR).to.equal('/tmp/data');
  });

  it('lets a run set the quota itself', () => {
    expect(quotasFrom(serviceEnv(4100, '/tmp/data', { QUOTA_OUTSTANDING_QUOTES: '1000' })).outstandingQuotes).to.equal(
      1_000,
    );
  });

  it('warns of each scenario with non-2xx answers, errors or timeouts, with a target or not', () => {
    const lines = failedAnswerLines([
      row('ceiling', { verdict: 'BASE' }),
      row('validate-quote', { non2xx: 13_412, ok2xx: 0, total: 13_412 }),
      row('apply-spread', { errors: 2, timeouts: 1, target: 0.4, verdict: 'MISS' }),
      row('validate', { target: 0.6, verdict: 'PASS' }),
    ]);
    expect(lines).to.deep.equal([
      'WARNING: validate-quote: 13,412 non-2xx answers, 0 errors and 0 timeouts among 13,412 requests: its figures are partly or wholly those of the failures',
      'WARNING: apply-spread: 0 non-2xx answers, 2 errors and 1 timeouts among 10,000 requests: its figures are partly or wholly those of the failures',
    ]);
  });

  it('says nothing when every request was answered with a 2xx', () => {
    expect(failedAnswerLines([row('ceiling', { verdict: 'BASE' }), row('validate')])).to.deep.equal([]);
  });
});
