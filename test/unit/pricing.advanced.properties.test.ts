/**
 * Invariants of every advanced type (fast-check), through the one evaluate: the discount is an
 * integer in [0, base]; applied_to adds up to it with no line below 0; final = value − discount;
 * evaluation is deterministic; removing an eligible unit from a BOGO order never raises the discount.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { DomainError } from '../../src/domain/errors.ts';
import type { Customer, Order, OrderItem } from '../../src/domain/discount/types.ts';
import type { OrderVoucher } from '../../src/domain/discount/stacking.ts';
import { evaluate, type Evaluation } from '../../src/domain/voucher/evaluate.ts';
import type { VoucherType } from '../../src/domain/voucher/events.ts';
import { evolve, type Voucher } from '../../src/domain/voucher/state.ts';
import { advancedVoucherCreated } from '../fixtures/events.ts';

const NOW = new Date('2026-01-15T12:00:00Z');
const IDS = ['A', 'B', 'C', 'D'];

const voucher = (type: VoucherType, config: Record<string, unknown>): Voucher =>
  evolve(null, advancedVoucherCreated(type, config, { voucherId: 'v_p', code: 'PROP' }))!;

const item: fc.Arbitrary<OrderItem> = fc.record({
  id: fc.constantFrom(...IDS),
  price: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 1_000_000 })),
  quantity: fc.integer({ min: 1, max: 12 }),
  category: fc.constantFrom('shoes', 'socks'),
});
const order: fc.Arbitrary<Order> = fc.oneof(
  fc.record({ value: fc.integer({ min: 0, max: 10_000_000 }) }),
  fc.tuple(fc.array(item, { maxLength: 6 }), fc.integer({ min: 0, max: 5_000 })).map(([items, extra]) => ({
    value: items.reduce((s, i) => s + i.price * i.quantity, 0) + extra,
    items,
  })),
);
const discount = fc.oneof(
  fc.integer({ min: 0, max: 10_000 }).map((bp) => ({ discount: bp / 100, discount_type: 'percentage' })),
  fc.integer({ min: 1, max: 200_000 }).map((cents) => ({ discount: cents, discount_type: 'fixed' })),
);

/** The result, or null when the voucher does not apply (a DomainError). */
const attempt = (run: () => Evaluation): Evaluation | null => {
  try {
    return run();
  } catch (error) {
    if (error instanceof DomainError) return null;
    throw error;
  }
};

const linesTotal = (o: Order) => (o.items ?? []).reduce((s, i) => s + i.price * i.quantity, 0);

/** `prior`: the discounts of the vouchers already on the order (final_amount is what the order comes to with all). */
const invariants = (o: Order, result: Evaluation, base: number, prior = 0): void => {
  expect(Number.isSafeInteger(result.discount_amount)).to.equal(true);
  expect(result.discount_amount).to.be.within(0, base);
  expect(result.final_amount).to.equal(o.value - prior - result.discount_amount);
  if (result.applied_to.length > 0)
    expect(result.applied_to.reduce((s, l) => s + l.discount_amount, 0)).to.equal(result.discount_amount);
  for (const line of result.applied_to) {
    expect(line.discount_amount).to.be.within(0, line.original_price);
    expect(line.final_price).to.equal(line.original_price - line.discount_amount);
  }
};

describe('pricing properties: the advanced types', () => {
  const bogo = fc
    .record({
      buy_quantity: fc.integer({ min: 1, max: 3 }),
      get_quantity: fc.integer({ min: 1, max: 3 }),
      get: fc.oneof(
        fc.integer({ min: 0, max: 10_000 }).map((bp) => ['percentage', bp / 100] as const),
        fc.integer({ min: 1, max: 5_000 }).map((c) => ['fixed', c] as const),
      ),
      max: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      excluded: fc.subarray(IDS, { maxLength: 2 }),
    })
    .map((c) => ({
      buy_quantity: c.buy_quantity,
      get_quantity: c.get_quantity,
      get_discount_type: c.get[0],
      get_discount: c.get[1],
      excluded_items: c.excluded,
      ...(c.max !== undefined ? { max_uses_per_order: c.max } : {}),
    }));

  it('bogo: discount in [0, eligible lines], lines add up, final = value − discount, deterministic', () => {
    fc.assert(
      fc.property(bogo, order, (config, o) => {
        const v = voucher('bogo', config);
        const result = attempt(() => evaluate(v, o, undefined, NOW));
        if (!result) return;
        const eligible = (o.items ?? [])
          .filter((i) => !config.excluded_items.includes(i.id))
          .reduce((s, i) => s + i.price * i.quantity, 0);
        invariants(o, result, eligible);
        expect(evaluate(voucher('bogo', config), o, undefined, NOW)).to.deep.equal(result);
      }),
      { numRuns: 400 },
    );
  });

  it('bogo: removing one eligible unit never raises the discount', () => {
    fc.assert(
      fc.property(bogo, order, fc.nat(), (config, o, pick) => {
        const lines = o.items ?? [];
        const eligible = lines.map((l, i) => i).filter((i) => !config.excluded_items.includes(lines[i]!.id));
        if (eligible.length === 0) return;
        const index = eligible[pick % eligible.length]!;
        const fewer = lines.flatMap((l, i) =>
          i !== index ? [l] : l.quantity > 1 ? [{ ...l, quantity: l.quantity - 1 }] : [],
        );
        const smaller: Order = { value: o.value - lines[index]!.price, items: fewer };
        const before = attempt(() => evaluate(voucher('bogo', config), o, undefined, NOW))?.discount_amount ?? 0;
        const after = attempt(() => evaluate(voucher('bogo', config), smaller, undefined, NOW))?.discount_amount ?? 0;
        expect(after).to.be.at.most(before);
      }),
      { numRuns: 400 },
    );
  });

  /** 1 to 6 tiers from ascending cut points: [c0, c1 − 1], [c1, c2 − 1], ..., last open or closed. */
  const tiers = fc
    .tuple(
      fc.uniqueArray(fc.integer({ min: 0, max: 2_000_000 }), { minLength: 1, maxLength: 6 }),
      fc.array(discount, { minLength: 6, maxLength: 6 }),
      fc.boolean(),
      fc.boolean(),
    )
    .map(([cuts, discounts, open, gap]) => {
      const sorted = [...cuts].sort((a, b) => a - b);
      return sorted.map((min, i) => ({
        min_value: min,
        max_value:
          i + 1 < sorted.length
            ? sorted[i + 1]! - (gap && sorted[i + 1]! - min > 1 ? 2 : 1)
            : open
              ? null
              : min + 100_000,
        ...discounts[i]!,
      }));
    });

  it('tiered: the one matching tier is applied; discount in [0, base]; no match only outside every tier', () => {
    fc.assert(
      fc.property(tiers, order, (list, o) => {
        const result = attempt(() => evaluate(voucher('tiered', { tiers: list }), o, undefined, NOW));
        const matching = list.filter((t) => t.min_value <= o.value && (t.max_value === null || o.value <= t.max_value));
        expect(matching.length).to.be.at.most(1);
        if (!result) {
          expect(matching).to.have.length(0);
          return;
        }
        expect(result.validation_details.applicable_tier).to.deep.equal(matching[0]);
        invariants(o, result, o.items && o.items.length > 0 ? linesTotal(o) : o.value);
        expect(evaluate(voucher('tiered', { tiers: list }), o, undefined, NOW)).to.deep.equal(result);
      }),
      { numRuns: 300 },
    );
  });

  const customer: fc.Arbitrary<Customer> = fc.record(
    { segment: fc.constantFrom('vip', 'new'), orders_count: fc.nat({ max: 10 }) },
    { requiredKeys: [] },
  );
  const condition = fc.oneof(
    fc.record({
      type: fc.constant('customer_segment'),
      operator: fc.constant('eq'),
      value: fc.constantFrom('vip', 'new'),
    }),
    fc.record({
      type: fc.constantFrom('order_value', 'customer_orders_count'),
      operator: fc.constantFrom('eq', 'gt', 'gte', 'lt', 'lte'),
      value: fc.nat({ max: 100_000 }),
    }),
    fc.record({
      type: fc.constant('item_category'),
      operator: fc.constant('eq'),
      value: fc.constantFrom('shoes', 'socks'),
    }),
  );

  it('conditional: CONDITION_NOT_MET exactly when too few conditions hold, else discount in [0, base]', () => {
    fc.assert(
      fc.property(
        fc.array(condition, { minLength: 1, maxLength: 4 }),
        discount,
        fc.boolean(),
        order,
        customer,
        (conditions, d, all, o, c) => {
          const v = voucher('conditional', { conditions, ...d, all_conditions_required: all });
          let result: Evaluation;
          try {
            result = evaluate(v, o, c, NOW);
          } catch (error) {
            expect((error as DomainError).code).to.equal('CONDITION_NOT_MET');
            const details = (error as DomainError).details as { required_conditions: number; met_conditions: number };
            expect(details.met_conditions).to.be.below(details.required_conditions);
            return;
          }
          invariants(o, result, o.items && o.items.length > 0 ? linesTotal(o) : o.value);
          expect(evaluate(v, o, c, NOW)).to.deep.equal(result);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('stackable: discount in [0, amount left]; the order total stays within max_total_discount', () => {
    const prior = fc.array(fc.nat({ max: 5_000 }), { maxLength: 3 });
    const cap = fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined });
    fc.assert(
      fc.property(discount, cap, prior, order, (d, max, priors, o) => {
        const config = {
          base_discount: d.discount,
          base_discount_type: d.discount_type,
          stack_rules: max === undefined ? {} : { max_total_discount: max },
          priority: 5,
        };
        const before = priors.reduce((s, p) => s + p, 0);
        if (before > o.value) return;
        const onOrder: OrderVoucher[] = priors.map((p, i) => ({
          voucherId: `v_${i}`,
          code: `S${i}`,
          type: 'stackable',
          priority: 1,
          applicationId: `va_${i}`,
          orderValue: o.value,
          discountAmount: p,
        }));
        const result = attempt(() => evaluate(voucher('stackable', config), o, undefined, NOW, onOrder));
        if (!result) return;
        const base = Math.min(o.items && o.items.length > 0 ? linesTotal(o) : o.value, o.value - before);
        invariants(o, result, base, before);
        if (max !== undefined)
          expect(before + result.discount_amount).to.be.at.most(
            Math.max(before, Math.floor((o.value * max) / 100 + 0.5)),
          );
        expect(evaluate(voucher('stackable', config), o, undefined, NOW, onOrder)).to.deep.equal(result);
      }),
      { numRuns: 300 },
    );
  });
});
