/** parseTimestamp (src/domain/clock.ts): the one reader of timestamps clients send. */
import { expect } from 'chai';
import fc from 'fast-check';
import { isoSeconds, parseTimestamp } from '../../src/domain/clock.ts';

describe('parseTimestamp', () => {
  it('reads RFC 3339 date-times with a zone as Date.parse does', () => {
    const instant = fc.date({
      min: new Date('0001-01-02T00:00:00Z'),
      max: new Date('9999-12-30T00:00:00Z'),
      noInvalidDate: true,
    });
    const zone = fc.oneof(
      fc.constant('Z'),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
        .map(([sign, h, m]) => `${sign}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`),
    );
    fc.assert(
      fc.property(instant, zone, (date, z) => {
        const text = `${date.toISOString().slice(0, 23)}${z}`;
        expect(parseTimestamp(text)?.getTime(), text).to.equal(Date.parse(text));
      }),
    );
  });

  it('converts to UTC; fractions are kept until isoSeconds drops them', () => {
    expect(isoSeconds(parseTimestamp('2026-01-01T10:00:00+02:00')!)).to.equal('2026-01-01T08:00:00Z');
    expect(parseTimestamp('2027-08-31T23:59:59.500Z')!.toISOString()).to.equal('2027-08-31T23:59:59.500Z');
    expect(parseTimestamp('0005-03-01T00:00:00Z')!.toISOString()).to.equal('0005-03-01T00:00:00.000Z');
  });

  it('refuses what is not an instant between the years 0000 and 9999 in UTC', () => {
    for (const text of [
      '2099-12-31T23:59:60Z', // leap second
      '2016-12-31T23:59:60Z',
      '2026-02-29T00:00:00Z', // not a leap year
      '2026-04-31T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T10:00:00', // no zone
      '2026-01-01T10:00:00+01', // hours-only zone: Date.parse cannot read it
      '2026-01-01',
      '9999-12-31T23:59:59-00:01', // 10000-01-01 in UTC
      '0000-01-01T00:00:00+00:01', // before 0000-01-01 in UTC
      '2026-01-01T10:00:00+24:00',
    ]) {
      expect(parseTimestamp(text), text).to.equal(undefined);
    }
    expect(parseTimestamp('2024-02-29T00:00:00Z')).to.be.instanceOf(Date);
    expect(parseTimestamp('9999-12-31T23:59:59Z')).to.be.instanceOf(Date);
  });
});
