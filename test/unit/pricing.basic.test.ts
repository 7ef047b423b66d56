import { expect } from 'chai';
import fc from 'fast-check';
import { priceBasic, discountBase, basicDiscount } from '../../src/domain/discount/basic.ts';
import type { Order } from '../../src/domain/discount/types.ts';

const order: Order = {
  value: 10_500, // 10_000 of lines + 500 shipping
  items: [
    { id: 'A', price: 2_000, quantity: 2 }, // 4_000
    { id: 'B', price: 1_500, quantity: 2 }, // 3_000
    { id: 'C', price: 3_000, quantity: 1 }, // 3_000
  ],
};

const line = (item_id: string, original_price: number, discount_amount: number) => ({
  item_id,
  original_price,
  discount_amount,
  final_price: original_price - discount_amount,
});

describe('pricing: priceBasic (hand-computed)', () => {
  it('percentage on all lines; shipping is not discounted', () => {
    expect(priceBasic(order, 'percentage', 10, {})).to.deep.equal({
      discount_amount: 1_000,
      final_amount: 9_500,
      applied_to: [line('A', 4_000, 400), line('B', 3_000, 300), line('C', 3_000, 300)],
    });
  });
  it('product_ids restrict the base', () => {
    expect(priceBasic(order, 'percentage', 25, { productIds: ['B', 'C', 'Z'] })).to.deep.equal({
      discount_amount: 1_500,
      final_amount: 9_000,
      applied_to: [line('B', 3_000, 750), line('C', 3_000, 750)],
    });
  });
  it('excluded ids are never eligible', () => {
    expect(priceBasic(order, 'fixed', 1_000, { excludedProductIds: ['A'] })).to.deep.equal({
      discount_amount: 1_000,
      final_amount: 9_500,
      applied_to: [line('B', 3_000, 500), line('C', 3_000, 500)],
    });
  });
  it('product_ids and excluded ids together', () => {
    const r = priceBasic(order, 'percentage', 50, { productIds: ['A', 'B'], excludedProductIds: ['B'] });
    expect(r).to.deep.equal({ discount_amount: 2_000, final_amount: 8_500, applied_to: [line('A', 4_000, 2_000)] });
  });
  it('odd cents: 33.33% of 1_001 spread by largest remainder', () => {
    const o: Order = {
      value: 1_001,
      items: [
        { id: 'x', price: 1, quantity: 1 },
        { id: 'y', price: 500, quantity: 2 },
      ],
    };
    // 1001 × 33.33% = 333.6333 → 334; shares 334×1/1001 = 0.33 → 0 and 334×1000/1001 = 333.67 → 333, +1 to y
    expect(priceBasic(o, 'percentage', 33.33, {})).to.deep.equal({
      discount_amount: 334,
      final_amount: 667,
      applied_to: [line('x', 1, 0), line('y', 1_000, 334)],
    });
  });
  it('three equal lines share odd cents to the lower index', () => {
    const o: Order = { value: 300, items: ['p', 'q', 'r'].map((id) => ({ id, price: 100, quantity: 1 })) };
    expect(priceBasic(o, 'fixed', 100, {}).applied_to.map((l) => l.discount_amount)).to.deep.equal([34, 33, 33]);
  });
  it('fixed above the base is capped at the base', () => {
    expect(priceBasic(order, 'fixed', 50_000, { productIds: ['C'] })).to.deep.equal({
      discount_amount: 3_000,
      final_amount: 7_500,
      applied_to: [line('C', 3_000, 3_000)],
    });
  });
  it('order without items discounts order.value, applied_to empty', () => {
    expect(priceBasic({ value: 1_005 }, 'percentage', 50, {})).to.deep.equal({
      discount_amount: 503,
      final_amount: 502,
      applied_to: [],
    });
    expect(priceBasic({ value: 800, items: [] }, 'fixed', 1_000, {})).to.deep.equal({
      discount_amount: 800,
      final_amount: 0,
      applied_to: [],
    });
  });
  it('restriction on an order without items: base 0, no discount', () => {
    expect(discountBase({ value: 1_000 }, { productIds: ['A'] })).to.deep.equal({ base: 0, eligibleLines: [] });
    expect(priceBasic({ value: 1_000 }, 'fixed', 500, { excludedProductIds: ['A'] })).to.deep.equal({
      discount_amount: 0,
      final_amount: 1_000,
      applied_to: [],
    });
  });
  it('empty restriction arrays mean no restriction', () => {
    expect(discountBase(order, { productIds: [], excludedProductIds: [] }).base).to.equal(10_000);
  });
  it('no eligible line: base 0 and no lines', () => {
    expect(discountBase(order, { productIds: ['Z'] })).to.deep.equal({ base: 0, eligibleLines: [] });
    expect(discountBase(order, { excludedProductIds: ['A', 'B', 'C'] })).to.deep.equal({ base: 0, eligibleLines: [] });
  });
  it('zero-price items take no share', () => {
    const o: Order = {
      value: 1_000,
      items: [
        { id: 'free', price: 0, quantity: 3 },
        { id: 'paid', price: 1_000, quantity: 1 },
      ],
    };
    expect(priceBasic(o, 'percentage', 15, {})).to.deep.equal({
      discount_amount: 150,
      final_amount: 850,
      applied_to: [line('free', 0, 0), line('paid', 1_000, 150)],
    });
  });
  it('duplicated item ids stay separate entries', () => {
    const o: Order = {
      value: 3_000,
      items: [
        { id: 'A', price: 1_000, quantity: 1 },
        { id: 'A', price: 1_000, quantity: 2 },
      ],
    };
    expect(priceBasic(o, 'fixed', 1_000, { productIds: ['A'] }).applied_to).to.deep.equal([
      line('A', 1_000, 333),
      line('A', 2_000, 667),
    ]);
  });
  it('basicDiscount rejects bad values', () => {
    expect(() => basicDiscount('fixed', -1, 100)).to.throw(RangeError);
    expect(() => basicDiscount('fixed', 1.5, 100)).to.throw(RangeError);
    expect(() => basicDiscount('percentage', 101, 100)).to.throw(RangeError);
    expect(() => basicDiscount('bogus' as 'fixed', 1, 100)).to.throw(RangeError);
  });
});

const ids = ['A', 'B', 'C', 'D', 'E'];
const itemArb = fc.record({
  id: fc.constantFrom(...ids),
  price: fc.nat({ max: 1_000_000 }),
  quantity: fc.integer({ min: 1, max: 20 }),
});
const orderWithItemsArb = fc
  .tuple(fc.array(itemArb, { minLength: 1, maxLength: 8 }), fc.nat({ max: 10_000 }))
  .map(([items, fees]): Order => ({ value: items.reduce((s, i) => s + i.price * i.quantity, 0) + fees, items }));
const orderWithoutItemsArb = fc
  .tuple(fc.nat({ max: 10_000_000 }), fc.constantFrom(undefined, [] as Order['items']))
  .map(([value, items]): Order => (items ? { value, items } : { value }));
const orderArb = fc.oneof(orderWithItemsArb, orderWithoutItemsArb);
const restrictionArb = fc.record(
  { productIds: fc.subarray(ids), excludedProductIds: fc.subarray(ids) },
  { requiredKeys: [] },
);
const voucherArb = fc.oneof(
  fc.tuple(
    fc.constant('percentage' as const),
    fc.nat({ max: 10_000 }).map((bp) => bp / 100),
  ),
  fc.tuple(fc.constant('fixed' as const), fc.nat({ max: 50_000_000 })),
);

describe('pricing: priceBasic (properties)', () => {
  it('discount within base, lines add up, amounts consistent, deterministic', () => {
    fc.assert(
      fc.property(orderArb, voucherArb, restrictionArb, (o, [type, value], r) => {
        const { base } = discountBase(o, r);
        const p = priceBasic(o, type, value, r);
        expect(Number.isSafeInteger(p.discount_amount)).to.equal(true);
        expect(p.discount_amount).to.be.within(0, base);
        expect(p.final_amount).to.equal(o.value - p.discount_amount);
        if ((o.items ?? []).length > 0) {
          expect(p.applied_to.reduce((s, l) => s + l.discount_amount, 0)).to.equal(p.discount_amount);
        } else {
          expect(p.applied_to).to.deep.equal([]);
        }
        for (const l of p.applied_to) {
          expect(l.final_price).to.equal(l.original_price - l.discount_amount);
          expect(l.final_price).to.be.at.least(0);
          expect(l.discount_amount).to.be.at.least(0);
        }
        expect(priceBasic(structuredClone(o), type, value, structuredClone(r))).to.deep.equal(p);
      }),
      { numRuns: 500 },
    );
  });
});
