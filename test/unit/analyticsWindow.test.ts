import { expect } from 'chai';
import { addDays, bucketOf, parseWindow } from '../../src/application/analytics/window.ts';
import { readableSize } from '../../src/http/exports.ts';

describe('analytics windows and buckets', () => {
  const now = new Date('2026-03-10T12:00:00Z');
  const code = (fn: () => unknown) => {
    try {
      fn();
      return 'none';
    } catch (e) {
      return e as { code: string; details: unknown };
    }
  };

  it('defaults to 30 calendar days ending today (UTC)', () => {
    expect(parseWindow(now, undefined, undefined)).to.deep.equal({
      startDay: '2026-02-09',
      endDay: '2026-03-10',
      days: 30,
    });
    expect(parseWindow(now, undefined, '2026-01-31')).to.deep.equal({
      startDay: '2026-01-02',
      endDay: '2026-01-31',
      days: 30,
    });
    expect(parseWindow(now, '2026-03-01', undefined)).to.deep.equal({
      startDay: '2026-03-01',
      endDay: '2026-03-10',
      days: 10,
    });
  });

  it('counts days with both ends included: 90 passes, 91 is INVALID_TIME_PERIOD (also across a leap February)', () => {
    expect(parseWindow(now, '2026-01-01', '2026-03-31').days).to.equal(90);
    expect(code(() => parseWindow(now, '2026-01-01', '2026-04-01'))).to.deep.include({
      code: 'INVALID_TIME_PERIOD',
      details: { max_days: 90, requested_days: 91 },
    });
    expect(parseWindow(now, '2024-01-01', '2024-03-30').days).to.equal(90); // 31 + 29 + 30
    expect(code(() => parseWindow(now, '2024-01-01', '2024-03-31'))).to.deep.include({
      details: { max_days: 90, requested_days: 91 },
    });
    expect(parseWindow(now, '2026-03-10', '2026-03-10').days).to.equal(1);
  });

  it('a timestamp selects its UTC day (offsets are converted first)', () => {
    expect(parseWindow(now, '2026-03-02T01:00:00+02:00', '2026-03-02T23:59:59Z')).to.deep.equal({
      startDay: '2026-03-01',
      endDay: '2026-03-02',
      days: 2,
    });
    expect(parseWindow(now, '2026-03-02T00:00:00.000Z', '2026-03-02T22:30:00-02:00')).to.deep.equal({
      startDay: '2026-03-02',
      endDay: '2026-03-03',
      days: 2,
    });
    for (const bad of ['2026-02-29', '2026-13-01', '03/02/2026', '2026-03-02 10:00', '']) {
      expect(
        code(() => parseWindow(now, bad, undefined)),
        bad,
      ).to.deep.include({ code: 'INVALID_REQUEST' });
    }
  });

  it('weeks start on Monday; months on the 1st, whatever their length', () => {
    expect(bucketOf('2026-03-02', 'week')).to.equal('2026-03-02'); // Monday
    expect(bucketOf('2026-03-08', 'week')).to.equal('2026-03-02'); // Sunday
    expect(bucketOf('2026-03-09', 'week')).to.equal('2026-03-09');
    expect(bucketOf('2026-01-01', 'week')).to.equal('2025-12-29'); // across a year
    expect(bucketOf('2024-02-29', 'month')).to.equal('2024-02-01');
    expect(bucketOf('2026-01-31', 'month')).to.equal('2026-01-01');
    expect(bucketOf('2026-04-30', 'month')).to.equal('2026-04-01');
    expect(addDays('2026-02-28', 1)).to.equal('2026-03-01');
    expect(addDays('2024-02-28', 1)).to.equal('2024-02-29');
  });

  it('file sizes read like people say them', () => {
    expect([0, 812, 1024, 2_621_440, 1536, 10_240_000].map(readableSize)).to.deep.equal([
      '0 B',
      '812 B',
      '1 KB',
      '2.5 MB',
      '1.5 KB',
      '9.8 MB',
    ]);
  });
});
