import { expect } from 'chai';
import fc from 'fast-check';
import { DomainError } from '../../src/domain/errors.ts';
import type { Order, OrderItem } from '../../src/domain/discount/types.ts';
import { evaluate, type Evaluation } from '../../src/domain/voucher/evaluate.ts';
import type { Conditions } from '../../src/domain/voucher/events.ts';
import { evolve, type Voucher } from '../../src/domain/voucher/state.ts';
import { voucherCreated } from '../fixtures/events.ts';

const NOW = new Date('2026-01-15T12:00:00Z');
const IDS = ['A', 'B', 'C', 'D', 'E'];

const voucher = (type: 'percentage' | 'fixed', value: number, conditions: Conditions): Voucher =>
  evolve(null, voucherCreated({ code: 'PROP', voucherType: type, value, currency: undefined, conditions }))!;

const percentage = fc.integer({ min: 0, max: 10_000 }).map((bp) => ({ type: 'percentage' as const, value: bp / 100 }));
const fixed = fc
  .oneof(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 100_000_000 }))
  .map((value) => ({ type: 'fixed' as const, value }));
const discount = fc.oneof(percentage, fixed);

const item: fc.Arbitrary<OrderItem> = fc.record({
  id: fc.constantFrom(...IDS),
  price: fc.oneof(fc.integer({ min: 0, max: 1_000 }), fc.integer({ min: 0, max: 1_000_000 })),
  quantity: fc.integer({ min: 1, max: 20 }),
});
/** Orders with 0..6 items and some extra (shipping) on top of the line totals, or without items. */
const order: fc.Arbitrary<Order> = fc.oneof(
  fc.record({ value: fc.integer({ min: 0, max: 100_000_000 }) }),
  fc
    .tuple(fc.array(item, { minLength: 0, maxLength: 6 }), fc.integer({ min: 0, max: 10_000 }))
    .map(([items, extra]) => ({
      value: items.reduce((sum, i) => sum + i.price * i.quantity, 0) + extra,
      items,
    })),
);
const restriction: fc.Arbitrary<Conditions> = fc.record(
  { product_ids: fc.subarray(IDS), excluded_product_ids: fc.subarray(IDS) },
  { requiredKeys: [] },
);

const eligible = (id: string, c: Conditions): boolean =>
  (!c.product_ids?.length || c.product_ids.includes(id)) && !(c.excluded_product_ids ?? []).includes(id);
const restricted = (c: Conditions): boolean =>
  (c.product_ids?.length ?? 0) > 0 || (c.excluded_product_ids?.length ?? 0) > 0;

/** The discount base, computed independently of the pricing module. */
const baseOf = (o: Order, c: Conditions): number => {
  if (!o.items?.length) return restricted(c) ? 0 : o.value;
  return o.items.filter((i) => eligible(i.id, c)).reduce((sum, i) => sum + i.price * i.quantity, 0);
};

/** Evaluates, or returns the no_eligible_items error, the only rejection these inputs may cause. */
const run = (type: 'percentage' | 'fixed', value: number, c: Conditions, o: Order): Evaluation | DomainError => {
  try {
    return evaluate(voucher(type, value, c), o, undefined, NOW);
  } catch (error) {
    if (
      error instanceof DomainError &&
      error.code === 'VOUCHER_INVALID' &&
      (error.details as { reason?: string }).reason === 'no_eligible_items'
    )
      return error;
    throw error;
  }
};

const RUNS = { numRuns: 500 };

describe('evaluate: money properties', () => {
  it('discount is an integer in [0, base]; fixed is min(value, base)', () => {
    fc.assert(
      fc.property(discount, restriction, order, ({ type, value }, c, o) => {
        const r = run(type, value, c, o);
        if (r instanceof DomainError) return;
        const base = baseOf(o, c);
        expect(Number.isSafeInteger(r.discount_amount)).to.equal(true);
        expect(r.discount_amount).to.be.within(0, base);
        if (type === 'fixed') expect(r.discount_amount).to.equal(Math.min(value, base));
        if (type === 'percentage') expect(Math.abs(r.discount_amount - (base * value) / 100)).to.be.at.most(0.5 + 1e-6);
      }),
      RUNS,
    );
  });

  it('applied_to has one line per eligible item, in order, and the lines add up to discount_amount', () => {
    fc.assert(
      fc.property(discount, restriction, order, ({ type, value }, c, o) => {
        const r = run(type, value, c, o);
        if (r instanceof DomainError) return;
        const lines = (o.items ?? []).filter((i) => eligible(i.id, c));
        expect(r.applied_to.map((l) => [l.item_id, l.original_price])).to.deep.equal(
          lines.map((i) => [i.id, i.price * i.quantity]),
        );
        expect(r.applied_to.reduce((sum, l) => sum + l.discount_amount, 0)).to.equal(
          lines.length > 0 ? r.discount_amount : 0,
        );
        for (const line of r.applied_to) {
          expect(Number.isSafeInteger(line.discount_amount)).to.equal(true);
          expect(line.discount_amount).to.be.within(0, line.original_price);
          expect(line.final_price).to.equal(line.original_price - line.discount_amount);
        }
      }),
      RUNS,
    );
  });

  it('final_amount = order.value − discount_amount', () => {
    fc.assert(
      fc.property(discount, restriction, order, ({ type, value }, c, o) => {
        const r = run(type, value, c, o);
        if (r instanceof DomainError) return;
        expect(r.final_amount).to.equal(o.value - r.discount_amount);
        expect(r.final_amount).to.be.at.least(0);
      }),
      RUNS,
    );
  });

  it('rejects with no_eligible_items exactly when a restriction leaves no eligible item', () => {
    fc.assert(
      fc.property(discount, restriction, order, ({ type, value }, c, o) => {
        const r = run(type, value, c, o);
        const none = restricted(c) && !(o.items ?? []).some((i) => eligible(i.id, c));
        expect(r instanceof DomainError).to.equal(none);
      }),
      RUNS,
    );
  });

  it('the same input gives a deep-equal output', () => {
    fc.assert(
      fc.property(discount, restriction, order, ({ type, value }, c, o) => {
        const first = run(type, value, c, o);
        const second = run(type, value, structuredClone(c), structuredClone(o));
        if (first instanceof DomainError) {
          expect(second).to.be.instanceOf(DomainError);
          expect((second as DomainError).details).to.deep.equal(first.details);
        } else {
          expect(second).to.deep.equal(first);
        }
      }),
      RUNS,
    );
  });
});
