import { expect } from 'chai';
import { base62Time, randomIds } from '../../src/application/ids.ts';

describe('ids', () => {
  describe('base62Time', () => {
    it('writes a time as 8 base62 digits, most significant first', () => {
      expect(base62Time(0)).to.equal('00000000');
      expect(base62Time(61)).to.equal('0000000z');
      expect(base62Time(62)).to.equal('00000010');
      expect(base62Time(62 ** 8 - 1)).to.equal('zzzzzzzz');
    });

    it('sorts as the times do, byte by byte (as SQLite compares TEXT)', () => {
      const times = [0, 1, 9, 10, 35, 36, 61, 62, 3_843, 3_844, Date.parse('2026-11-24T10:00:00.000Z'), 62 ** 8 - 1];
      for (let i = 1; i < times.length; i += 1) {
        const [a, b] = [base62Time(times[i - 1]!), base62Time(times[i]!)];
        expect(Buffer.compare(Buffer.from(a), Buffer.from(b)), `${a} < ${b}`).to.equal(-1);
      }
    });
  });

  describe('application ids', () => {
    const at = new Date('2026-11-24T10:00:00.000Z');

    it('are va_, the time in 8 digits and 16 random base62 characters', () => {
      const id = randomIds.applicationId(at);
      expect(id).to.match(/^va_[0-9A-Za-z]{24}$/);
      expect(id.slice(3, 11)).to.equal(base62Time(at.getTime()));
    });

    it('differ when made at the same time', () => {
      const ids = new Set(Array.from({ length: 1_000 }, () => randomIds.applicationId(at)));
      expect(ids.size).to.equal(1_000);
    });

    it('made a millisecond later sort later', () => {
      const later = new Date(at.getTime() + 1);
      for (let i = 0; i < 100; i += 1)
        expect(randomIds.applicationId(at) < randomIds.applicationId(later)).to.equal(true);
    });
  });
});
