/** The analytics read model's day of a timestamp (dayOf) is the UTC date that Date gives it, for any timestamp. */
import { expect } from 'chai';
import fc from 'fast-check';
import { dayOf } from '../../src/projections/analyticsDocs.ts';

const reference = (iso: string): string => new Date(iso).toISOString().slice(0, 10);
const outcome = (f: (iso: string) => string, iso: string): string => {
  try {
    return f(iso);
  } catch (error) {
    return `throws ${(error as Error).name}`;
  }
};

describe('analytics dayOf', () => {
  it('gives the UTC date of any instant, in the forms the service writes and with an offset', () => {
    const instant = fc.date({
      min: new Date('1970-01-01T00:00:00Z'),
      max: new Date('2200-12-31T23:59:59Z'),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(instant, fc.constantFrom('ms', 's', '+02:00', '-11:30'), (date, form) => {
        const ms = date.toISOString();
        const iso = form === 'ms' ? ms : form === 's' ? `${ms.slice(0, 19)}Z` : `${ms.slice(0, 19)}${form}`;
        expect(dayOf(iso), iso).to.equal(reference(iso));
      }),
      { numRuns: 2_000 },
    );
  });

  it('agrees with Date on days that roll over, the end of a day, and invalid dates', () => {
    for (const iso of [
      '2026-02-30T00:00:00Z',
      '2026-02-29T10:00:00Z',
      '2024-02-29T23:59:59.999Z',
      '2026-01-31T24:00:00Z',
      '2026-01-31T23:59:60Z',
      '2026-13-01T00:00:00Z',
      '2026-00-10T00:00:00Z',
      '2026-01-05T10:00:00+14:00',
      '2026-01-05',
      'not a date',
    ])
      expect(outcome(dayOf, iso), iso).to.equal(outcome(reference, iso));
  });
});
