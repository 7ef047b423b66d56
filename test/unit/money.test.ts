import { expect } from 'chai';
import fc from 'fast-check';
import { percentOf, isCents, hasAtMostTwoDecimals } from '../../src/domain/discount/money.ts';
import { allocate } from '../../src/domain/discount/allocation.ts';

const MAX = Number.MAX_SAFE_INTEGER;

describe('money: percentOf', () => {
  const cases: Array<[number, number, number, string]> = [
    [999, 10, 100, '99.9 rounds up'],
    [1005, 50, 503, '502.5 half-up'],
    [1, 50, 1, '0.5 half-up'],
    [1, 49, 0, '0.49 rounds down'],
    [333, 33.33, 111, '110.9889 rounds up'],
    [1000, 12.5, 125, 'exact'],
    [199, 12.5, 25, '24.875 rounds up'],
    [101, 0.01, 0, '0.0101 rounds down'],
    [5000, 0.01, 1, '0.5 half-up at 1 bp'],
    [12345, 0, 0, '0%'],
    [12345, 100, 12345, '100%'],
    [0, 55.55, 0, 'zero base'],
    [MAX, 100, MAX, 'MAX_SAFE_INTEGER × 100% exact'],
    [MAX, 50, 4503599627370496, 'MAX_SAFE_INTEGER × 50% half-up exact'],
    [MAX, 0.01, 900719925474, 'MAX_SAFE_INTEGER × 0.01% = 900719925474.0991'],
  ];
  for (const [base, pct, want, note] of cases) {
    it(`${base} × ${pct}% = ${want} (${note})`, () => {
      expect(percentOf(base, pct)).to.equal(want);
    });
  }

  const bad: Array<[number, number, string]> = [
    [-1, 10, 'negative base'],
    [10.5, 10, 'fractional base'],
    [MAX + 1, 10, 'unsafe base'],
    [NaN, 10, 'NaN base'],
    [100, -0.01, 'negative percent'],
    [100, 100.01, 'percent above 100'],
    [100, 12.345, 'three decimals'],
    [100, 0.001, 'tiny third decimal'],
    [100, NaN, 'NaN percent'],
    [100, Infinity, 'infinite percent'],
  ];
  for (const [base, pct, note] of bad) {
    it(`rejects ${note} with RangeError`, () => {
      expect(() => percentOf(base, pct)).to.throw(RangeError);
    });
  }

  it('is an integer in [0, base] and monotone in percent', () => {
    fc.assert(
      fc.property(fc.nat({ max: MAX }), fc.nat({ max: 10000 }), fc.nat({ max: 10000 }), (base, a, b) => {
        const [lo, hi] = a <= b ? [a / 100, b / 100] : [b / 100, a / 100];
        const pLo = percentOf(base, lo);
        const pHi = percentOf(base, hi);
        expect(Number.isInteger(pLo)).to.equal(true);
        expect(pLo).to.be.within(0, base);
        expect(pHi).to.be.within(0, base);
        expect(pLo).to.be.at.most(pHi);
      }),
    );
  });
});

describe('money: isCents and hasAtMostTwoDecimals', () => {
  it('isCents accepts safe non-negative integers only', () => {
    expect([0, 1, MAX].map(isCents)).to.deep.equal([true, true, true]);
    expect([-1, 1.5, MAX + 1, NaN, '5', null].map(isCents)).to.deep.equal([false, false, false, false, false, false]);
  });
  it('hasAtMostTwoDecimals tolerates float noise but not a third decimal', () => {
    expect([0, 12.5, 33.33, 0.29, 0.07, 99.99, 1e10 + 0.01].map(hasAtMostTwoDecimals)).to.deep.equal([
      true,
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([12.345, 0.001, 33.333, NaN, Infinity].map(hasAtMostTwoDecimals)).to.deep.equal([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('allocation: allocate', () => {
  const cases: Array<[number, number[], number[], string]> = [
    [10, [1, 1, 1], [4, 3, 3], 'three-way tie goes to lowest index'],
    [2, [1, 1, 1], [1, 1, 0], 'two leftovers to the two lowest indexes'],
    [100, [3000, 1000], [75, 25], 'exact proportions'],
    [10, [1, 2, 3], [2, 3, 5], 'largest remainders (1.67, 3.33, 5)'],
    [7, [0, 5, 0, 5], [0, 4, 0, 3], 'zero weights get nothing, tie to lower index'],
    [5, [0, 0, 7], [0, 0, 5], 'single positive weight'],
    [0, [0, 0], [0, 0], 'total 0 over zero weights'],
    [0, [3, 4], [0, 0], 'total 0'],
    [0, [], [], 'empty'],
    [3, [1, 1, 1], [1, 1, 1], 'total equal to weights'],
    [1, [333, 333, 334], [0, 0, 1], 'one cent to the largest remainder'],
  ];
  for (const [total, weights, want, note] of cases) {
    it(`allocate(${total}, [${weights}]) = [${want}] (${note})`, () => {
      expect(allocate(total, weights)).to.deep.equal(want);
    });
  }

  it('throws RangeError for a positive total over zero weights or invalid inputs', () => {
    expect(() => allocate(1, [0, 0])).to.throw(RangeError);
    expect(() => allocate(1, [])).to.throw(RangeError);
    expect(() => allocate(-1, [1])).to.throw(RangeError);
    expect(() => allocate(1.5, [1])).to.throw(RangeError);
    expect(() => allocate(1, [1, -1])).to.throw(RangeError);
  });

  const weightsArb = fc.array(fc.nat({ max: 1_000_000_000 }), { minLength: 1, maxLength: 30 });

  it('sums to total, shares are non-negative integers and deterministic', () => {
    fc.assert(
      fc.property(weightsArb, fc.nat({ max: MAX }), (weights, total) => {
        fc.pre(weights.some((w) => w > 0));
        const shares = allocate(total, weights);
        expect(shares).to.have.length(weights.length);
        expect(shares.every((s) => Number.isSafeInteger(s) && s >= 0)).to.equal(true);
        expect(shares.reduce((a, b) => a + b, 0)).to.equal(total);
        weights.forEach((w, i) => {
          if (w === 0) expect(shares[i]).to.equal(0);
        });
        expect(allocate(total, [...weights])).to.deep.equal(shares);
      }),
    );
  });

  it('each share ≤ its weight when total ≤ Σw', () => {
    fc.assert(
      fc.property(weightsArb, fc.double({ min: 0, max: 1, noNaN: true }), (weights, frac) => {
        const sum = weights.reduce((a, b) => a + b, 0);
        const total = Math.floor(sum * frac);
        const shares = allocate(total, weights);
        shares.forEach((s, i) => expect(s).to.be.at.most(weights[i]));
        expect(shares.reduce((a, b) => a + b, 0)).to.equal(total);
      }),
    );
  });
});
