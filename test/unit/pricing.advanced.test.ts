/**
 * The advanced types through the ONE evaluate (as validate and apply use it), with cents
 * computed by hand in each case.
 */
import { expect } from 'chai';
import { DomainError } from '../../src/domain/errors.ts';
import type { Customer, Order } from '../../src/domain/discount/types.ts';
import type { OrderVoucher } from '../../src/domain/discount/stacking.ts';
import { evaluate } from '../../src/domain/voucher/evaluate.ts';
import type { Conditions, VoucherCreated, VoucherType } from '../../src/domain/voucher/events.ts';
import { evolve, type Voucher } from '../../src/domain/voucher/state.ts';
import { advancedVoucherCreated } from '../fixtures/events.ts';

const NOW = new Date('2026-01-15T12:00:00Z');

export const advanced = (
  type: VoucherType,
  config: Record<string, unknown>,
  conditions: Conditions = {},
  validationRules?: Array<Record<string, unknown>>,
): Voucher =>
  evolve(
    null,
    advancedVoucherCreated(type, config, {
      voucherId: `v_${type}`,
      code: type.toUpperCase(),
      conditions,
      ...(validationRules ? { validationRules: validationRules as VoucherCreated['data']['validationRules'] } : {}),
    }),
  )!;

const thrown = (fn: () => unknown): DomainError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('expected a DomainError');
};

const items = (...lines: Array<[string, number, number, string?]>) =>
  lines.map(([id, price, quantity, category]) => ({ id, price, quantity, ...(category ? { category } : {}) }));
const orderOf = (lines: ReturnType<typeof items>, extra = 0): Order => ({
  value: lines.reduce((s, l) => s + l.price * l.quantity, 0) + extra,
  items: lines,
});

describe('pricing: bogo (buy X get Y) through evaluate', () => {
  const b1g1 = { buy_quantity: 1, get_quantity: 1 };
  const cases: Array<
    [string, Record<string, unknown>, Order, number, Array<[string, number]>, Record<string, number>]
  > = [
    // [name, config, order, discount, applied_to [item, share], details]
    [
      'buy 1 get 1 free: groups (1000,900) (800,700), 500 left over',
      b1g1,
      orderOf(items(['A', 1000, 1], ['B', 900, 1], ['C', 800, 1], ['D', 700, 1], ['E', 500, 1])),
      1600,
      [
        ['B', 900],
        ['D', 700],
      ],
      { bogo_eligible_items: 5, bogo_applied_items: 2, discount_applied: 1600, remaining_eligibility: 1 },
    ],
    [
      'buy 2 get 1 at 50%: (1000,900,800) → 800 × 50%',
      { buy_quantity: 2, get_quantity: 1, get_discount: 50, get_discount_type: 'percentage' },
      orderOf(items(['A', 1000, 1], ['B', 900, 1], ['C', 800, 1], ['D', 700, 1], ['E', 500, 1])),
      400,
      [['C', 400]],
      { bogo_eligible_items: 5, bogo_applied_items: 1, discount_applied: 400, remaining_eligibility: 1 },
    ],
    [
      'one line of 5 units, buy 1 get 1: 2 groups, the 5th unit is left over',
      b1g1,
      orderOf(items(['A', 1999, 5])),
      3998,
      [['A', 3998]],
      { bogo_eligible_items: 5, bogo_applied_items: 2, discount_applied: 3998, remaining_eligibility: 1 },
    ],
    [
      'quantity an exact multiple: 6 units buy 2 get 1 → 2 groups, next needs 3 more',
      { buy_quantity: 2, get_quantity: 1 },
      orderOf(items(['A', 300, 6])),
      600,
      [['A', 600]],
      { bogo_eligible_items: 6, bogo_applied_items: 2, discount_applied: 600, remaining_eligibility: 3 },
    ],
    [
      'max_uses_per_order 1 caps the groups (remaining 0)',
      { ...b1g1, max_uses_per_order: 1 },
      orderOf(items(['A', 1000, 4])),
      1000,
      [['A', 1000]],
      { bogo_eligible_items: 4, bogo_applied_items: 1, discount_applied: 1000, remaining_eligibility: 0 },
    ],
    [
      'excluded items are not units; applicable_items restricts',
      { ...b1g1, applicable_items: ['A', 'B'], excluded_items: ['C'] },
      orderOf(items(['A', 1000, 1], ['B', 600, 1], ['C', 50, 5])),
      600,
      [['B', 600]],
      { bogo_eligible_items: 2, bogo_applied_items: 1, discount_applied: 600, remaining_eligibility: 2 },
    ],
    [
      'zero-price units are units: the free one is worth 0',
      b1g1,
      orderOf(items(['A', 1000, 1], ['GIFT', 0, 1])),
      0,
      [['GIFT', 0]],
      { bogo_eligible_items: 2, bogo_applied_items: 1, discount_applied: 0, remaining_eligibility: 2 },
    ],
    [
      'odd cents: 33.33% of 1001 + 1001 = 667.2666 → 667, split 334/333',
      { ...b1g1, get_discount: 33.33 },
      orderOf(items(['A', 1001, 1], ['B', 1001, 1], ['C', 1001, 1], ['D', 1001, 1])),
      667,
      [
        ['B', 334],
        ['D', 333],
      ],
      { bogo_eligible_items: 4, bogo_applied_items: 2, discount_applied: 667, remaining_eligibility: 2 },
    ],
    [
      'fixed 250 per unit, never above the unit price',
      { buy_quantity: 1, get_quantity: 2, get_discount: 250, get_discount_type: 'fixed' },
      orderOf(items(['A', 2000, 1], ['B', 500, 1], ['C', 100, 1])),
      350,
      [
        ['B', 250],
        ['C', 100],
      ],
      { bogo_eligible_items: 3, bogo_applied_items: 2, discount_applied: 350, remaining_eligibility: 3 },
    ],
    [
      'equal prices keep line order: the later line gets the free unit',
      b1g1,
      orderOf(items(['X', 700, 1], ['Y', 700, 1]), 400),
      700,
      [['Y', 700]],
      { bogo_eligible_items: 2, bogo_applied_items: 1, discount_applied: 700, remaining_eligibility: 2 },
    ],
  ];
  for (const [name, config, order, discount, lines, details] of cases) {
    it(name, () => {
      const result = evaluate(advanced('bogo', config), order, undefined, NOW);
      expect(result.discount_amount).to.equal(discount);
      expect(result.final_amount).to.equal(order.value - discount);
      expect(result.applied_to.map((l) => [l.item_id, l.discount_amount])).to.deep.equal(lines);
      expect(result.validation_details).to.deep.include(details);
    });
  }

  it('an empty items list, or no eligible unit: VOUCHER_INVALID no_eligible_items', () => {
    expect(
      thrown(() => evaluate(advanced('bogo', b1g1), { value: 5000, items: [] }, undefined, NOW)).details,
    ).to.include({ reason: 'no_eligible_items' });
    expect(
      thrown(() =>
        evaluate(advanced('bogo', { ...b1g1, applicable_items: ['Z'] }), orderOf(items(['A', 100, 3])), undefined, NOW),
      ).details,
    ).to.include({ reason: 'no_eligible_items' });
  });

  it('fewer units than one group: VOUCHER_INVALID insufficient_quantity', () => {
    expect(
      thrown(() =>
        evaluate(advanced('bogo', { buy_quantity: 2, get_quantity: 1 }), orderOf(items(['A', 100, 2])), undefined, NOW),
      ).details,
    ).to.deep.equal({ reason: 'insufficient_quantity', min_quantity: 3, current_quantity: 2 });
  });

  it('min_order_value in the config: VOUCHER_INVALID min_order_value', () => {
    const error = thrown(() =>
      evaluate(advanced('bogo', { ...b1g1, min_order_value: 5000 }), orderOf(items(['A', 2000, 2])), undefined, NOW),
    );
    expect(error.details).to.deep.equal({
      reason: 'min_order_value',
      min_required: 5000,
      current_value: 4000,
      currency: null,
    });
  });
});

describe('pricing: tiered through evaluate', () => {
  const tiers = [
    { min_value: 0, max_value: 4999, discount: 5, discount_type: 'percentage' },
    { min_value: 5000, max_value: 9999, discount: 10, discount_type: 'percentage' },
    { min_value: 10000, max_value: null, discount: 1500, discount_type: 'fixed' },
  ];
  const cases: Array<[number, number, number]> = [
    // [order.value, tier index, discount]
    [0, 0, 0],
    [4999, 0, 250], // 249.95 → 250 (half-up)
    [5000, 1, 500], // exactly on the lower edge of tier 1
    [7499, 1, 750], // 749.9 → 750
    [9999, 1, 1000], // 999.9 → 1000, upper edge of tier 1
    [10000, 2, 1500],
    [1_000_000, 2, 1500],
  ];
  for (const [value, index, discount] of cases) {
    it(`order.value ${value} → tier ${index}, ${discount} off`, () => {
      const result = evaluate(advanced('tiered', { tiers }), { value }, undefined, NOW);
      expect(result.discount_amount).to.equal(discount);
      expect(result.final_amount).to.equal(value - discount);
      expect(result.validation_details).to.deep.include({
        order_value: value,
        applicable_tier: tiers[index],
        discount_amount: discount,
      });
    });
  }

  it('the tier is chosen by order.value; the discount applies to the eligible lines', () => {
    const order = orderOf(items(['A', 3000, 1], ['B', 3000, 1]), 500); // 6500 → tier 1 (10%), base = A only
    const result = evaluate(advanced('tiered', { tiers }, { product_ids: ['A'] }), order, undefined, NOW);
    expect(result.discount_amount).to.equal(300);
    expect(result.applied_to).to.deep.equal([
      { item_id: 'A', original_price: 3000, discount_amount: 300, final_price: 2700 },
    ]);
  });

  it('an order value in a gap: VOUCHER_INVALID no_matching_tier', () => {
    const gap = [
      { min_value: 1000, max_value: 1999, discount: 5, discount_type: 'percentage' },
      { min_value: 5000, max_value: null, discount: 10, discount_type: 'percentage' },
    ];
    const error = thrown(() =>
      evaluate(advanced('tiered', { tiers: gap }), { value: 3000, currency: 'USD' }, undefined, NOW),
    );
    expect(error.code).to.equal('VOUCHER_INVALID');
    expect(error.details).to.deep.equal({
      reason: 'no_matching_tier',
      current_value: 3000,
      currency: 'USD',
      tiers: gap,
    });
    expect(
      thrown(() => evaluate(advanced('tiered', { tiers: gap }), { value: 999 }, undefined, NOW)).details,
    ).to.include({ reason: 'no_matching_tier' });
  });

  it('a config currency refuses orders in another currency', () => {
    const error = thrown(() =>
      evaluate(advanced('tiered', { tiers, currency: 'EUR' }), { value: 6000, currency: 'USD' }, undefined, NOW),
    );
    expect(error.details).to.deep.equal({
      reason: 'currency_mismatch',
      required_currency: 'EUR',
      current_currency: 'USD',
    });
  });
});

describe('pricing: conditional through evaluate', () => {
  const config = (all: boolean) => ({
    conditions: [
      { type: 'customer_segment', operator: 'eq', value: 'vip' },
      { type: 'order_value', operator: 'gte', value: 5000 },
      { type: 'customer_registration_date', operator: 'lt', value: '2025-01-01T00:00:00Z' },
    ],
    discount: 20,
    discount_type: 'percentage',
    all_conditions_required: all,
  });
  const vip: Customer = { id: 'c1', segment: 'vip', registration_date: '2024-06-01T00:00:00Z' };

  it('all met: 20% of 7499 = 1499.8 → 1500, details list the conditions met', () => {
    const result = evaluate(advanced('conditional', config(true)), { value: 7499 }, vip, NOW);
    expect(result.discount_amount).to.equal(1500);
    expect(result.validation_details).to.deep.include({
      conditions_met: ['customer_segment', 'order_value', 'customer_registration_date'],
      conditions_failed: [],
      all_conditions_satisfied: true,
      discount_applicable: true,
    });
  });

  it('all required, one unmet: CONDITION_NOT_MET with the failed one, required 3, met 2', () => {
    const error = thrown(() => evaluate(advanced('conditional', config(true)), { value: 4999 }, vip, NOW));
    expect(error.code).to.equal('CONDITION_NOT_MET');
    expect(error.details).to.deep.equal({
      failed_conditions: [{ type: 'order_value', expected: { operator: 'gte', value: 5000 }, actual: 4999 }],
      required_conditions: 3,
      met_conditions: 2,
    });
  });

  it('any one suffices: a fixed-discount voucher with one condition met applies, the others listed as failed', () => {
    const c = { ...config(false), discount: 750, discount_type: 'fixed' };
    const result = evaluate(advanced('conditional', c), { value: 6000 }, { id: 'c2', segment: 'new' }, NOW);
    expect(result.discount_amount).to.equal(750);
    expect(result.validation_details).to.deep.include({
      conditions_met: ['order_value'],
      all_conditions_satisfied: false,
    });
    expect((result.validation_details.conditions_failed as unknown[]).length).to.equal(2);
  });

  it('any one, none met (no customer at all): CONDITION_NOT_MET, required 1, met 0, actual null', () => {
    const error = thrown(() => evaluate(advanced('conditional', config(false)), { value: 100 }, undefined, NOW));
    expect(error.details).to.deep.include({ required_conditions: 1, met_conditions: 0 });
    expect((error.details as { failed_conditions: unknown[] }).failed_conditions[0]).to.deep.equal({
      type: 'customer_segment',
      expected: { operator: 'eq', value: 'vip' },
      actual: null,
    });
  });

  it('customer_orders_count, customer_region and item_category', () => {
    const c = {
      conditions: [
        { type: 'customer_orders_count', operator: 'gt', value: 2 },
        { type: 'customer_region', operator: 'eq', value: 'EU' },
        { type: 'item_category', operator: 'eq', value: 'shoes' },
      ],
      discount: 10,
      discount_type: 'percentage',
    };
    const order = orderOf(items(['A', 4001, 1, 'shoes'], ['B', 1000, 1, 'socks']));
    expect(
      evaluate(advanced('conditional', c), order, { orders_count: 3, region: 'EU' }, NOW).discount_amount,
    ).to.equal(500); // 500.1 → 500
    expect(
      thrown(() => evaluate(advanced('conditional', c), order, { orders_count: 2, region: 'EU' }, NOW)).details,
    ).to.deep.include({
      failed_conditions: [{ type: 'customer_orders_count', expected: { operator: 'gt', value: 2 }, actual: 2 }],
    });
  });
});

describe('pricing: stackable through evaluate', () => {
  const stackable = (base: number, kind: string, rules: Record<string, unknown> = {}, priority = 0) =>
    advanced('stackable', { base_discount: base, base_discount_type: kind, stack_rules: rules, priority });
  const on = (code: string, type: VoucherType, discount: number, over: Partial<OrderVoucher> = {}): OrderVoucher => ({
    voucherId: `v_${code}`,
    code,
    type,
    priority: 0,
    applicationId: `va_${code}`,
    orderValue: 10_000,
    discountAmount: discount,
    ...over,
  });

  it('alone: its base discount (15% of 10000 = 1500)', () => {
    expect(evaluate(stackable(15, 'percentage'), { value: 10_000 }, undefined, NOW).discount_amount).to.equal(1500);
  });

  it('after a 1000 discount: 15% of the 9000 left = 1350', () => {
    const result = evaluate(stackable(15, 'percentage', {}, 2), { value: 10_000 }, undefined, NOW, [
      on('FIRST', 'percentage', 1000),
    ]);
    expect(result.discount_amount).to.equal(1350);
    expect(result.final_amount).to.equal(7650); // what the order comes to with both: 10000 − 1000 − 1350
    expect(result.validation_details).to.deep.include({
      stack_position: 2,
      prior_discount: 1000,
      amount_left: 9000,
      max_total_discount: null,
    });
  });

  it('max_total_discount 20% caps the total: 2000 − 1000 already = 1000', () => {
    expect(
      evaluate(stackable(15, 'percentage', { max_total_discount: 20 }), { value: 10_000 }, undefined, NOW, [
        on('FIRST', 'percentage', 1000),
      ]).discount_amount,
    ).to.equal(1000);
  });

  it('max_total_discount reached: STACKING_CONFLICT max_total_discount_reached', () => {
    const error = thrown(() =>
      evaluate(stackable(500, 'fixed', { max_total_discount: 10 }), { value: 10_000 }, undefined, NOW, [
        on('FIRST', 'percentage', 1000),
      ]),
    );
    expect(error.code).to.equal('STACKING_CONFLICT');
    expect(error.details).to.include({
      conflicting_voucher: 'STACKABLE',
      conflict_reason: 'max_total_discount_reached',
    });
  });

  it('fixed on the amount left: never above it (9500 off a 10000 order leaves 500)', () => {
    expect(
      evaluate(stackable(1000, 'fixed'), { value: 10_000 }, undefined, NOW, [on('BIG', 'fixed', 9500)]).discount_amount,
    ).to.equal(500);
  });

  const conflicts: Array<[string, Voucher, OrderVoucher[], string, string]> = [
    [
      'a non-stackable voucher on an order that has one',
      advanced('tiered', { tiers: [{ min_value: 0, max_value: null, discount: 5, discount_type: 'percentage' }] }),
      [on('FIRST', 'fixed', 100)],
      'FIRST',
      'not_stackable',
    ],
    [
      'stackable_with not naming the type',
      stackable(5, 'percentage', { stackable_with: ['stackable'] }),
      [on('FIRST', 'fixed', 100)],
      'FIRST',
      'type_not_stackable',
    ],
    [
      'excluded_types naming the type',
      stackable(5, 'percentage', { excluded_types: ['bogo'] }),
      [on('FIRST', 'bogo', 100)],
      'FIRST',
      'type_excluded',
    ],
    [
      "the other voucher's rules exclude stackable",
      stackable(5, 'percentage'),
      [on('S1', 'stackable', 100, { stackRules: { excluded_types: ['stackable'] } })],
      'S1',
      'type_excluded',
    ],
    [
      'max_stack_count 2 with two already on',
      stackable(5, 'percentage', { max_stack_count: 2 }),
      [on('S1', 'fixed', 100), on('S2', 'stackable', 100)],
      'S1',
      'max_stack_count',
    ],
    [
      "the other's max_stack_count",
      stackable(5, 'percentage'),
      [on('S1', 'stackable', 100, { stackRules: { max_stack_count: 1 } })],
      'S1',
      'max_stack_count',
    ],
    [
      'a lower priority number after a higher one',
      stackable(5, 'percentage', {}, 1),
      [on('S1', 'stackable', 100, { priority: 5 })],
      'S1',
      'priority_order',
    ],
    [
      'another order value',
      stackable(5, 'percentage'),
      [on('S1', 'fixed', 100, { orderValue: 9000 })],
      'S1',
      'order_value_mismatch',
    ],
  ];
  for (const [name, voucher, onOrder, conflicting, reason] of conflicts) {
    it(`STACKING_CONFLICT: ${name}`, () => {
      const error = thrown(() => evaluate(voucher, { value: 10_000 }, undefined, NOW, onOrder));
      expect(error.code).to.equal('STACKING_CONFLICT');
      expect(error.details).to.include({ conflicting_voucher: conflicting, conflict_reason: reason });
    });
  }

  it('stackable_types lists what the voucher may join', () => {
    const error = thrown(() =>
      evaluate(
        stackable(5, 'percentage', { stackable_with: ['percentage', 'stackable'], excluded_types: ['fixed'] }),
        { value: 10_000 },
        undefined,
        NOW,
        [on('B', 'bogo', 1)],
      ),
    );
    expect(error.details).to.deep.include({ stackable_types: ['percentage', 'stackable'] });
  });
});

describe('validation_rules through evaluate', () => {
  const rules = [
    { type: 'order_value', operator: 'gte', value: 2000, currency: 'USD' },
    {
      type: 'items',
      rules: [
        { item_id: 'A', min_quantity: 2, max_quantity: 3 },
        { category: 'shoes', min_value: 1000 },
      ],
    },
    {
      type: 'customer',
      rules: [
        { segment: 'vip', min_orders: 1 },
        { registration_date: { operator: 'lte', value: '2025-12-31T00:00:00Z' } },
      ],
    },
  ];
  const voucher = () => advanced('percentage', {}, {}, rules);
  const pct = (): Voucher => ({ ...voucher(), config: undefined, value: 10 });
  const order = orderOf(items(['A', 500, 2], ['S', 1200, 1, 'shoes']), 100);
  const customer: Customer = { segment: 'vip', orders_count: 4, registration_date: '2025-03-01T00:00:00Z' };

  it('all hold: the discount applies and conditions_met says so', () => {
    const result = evaluate(pct(), { ...order, currency: 'USD' }, customer, NOW);
    expect(result.discount_amount).to.equal(220); // 10% of 2200 of lines
    expect(result.conditions_met).to.include('validation_rules');
  });

  it('each unmet check is listed: required = all 8 checks', () => {
    const error = thrown(() =>
      evaluate(
        pct(),
        { ...orderOf(items(['A', 500, 4], ['S', 900, 1, 'shoes']), 0), currency: 'EUR' },
        { segment: 'vip' },
        NOW,
      ),
    );
    expect(error.code).to.equal('CONDITION_NOT_MET');
    expect(error.details).to.deep.equal({
      failed_conditions: [
        { type: 'order_currency', expected: { operator: 'eq', value: 'USD' }, actual: 'EUR' },
        { type: 'item_quantity', expected: { operator: 'lte', value: 3, item_id: 'A' }, actual: 4 },
        { type: 'category_value', expected: { operator: 'gte', value: 1000, category: 'shoes' }, actual: 900 },
        { type: 'customer_orders_count', expected: { operator: 'gte', value: 1 }, actual: null },
        {
          type: 'customer_registration_date',
          expected: { operator: 'lte', value: '2025-12-31T00:00:00Z' },
          actual: null,
        },
      ],
      required_conditions: 8,
      met_conditions: 3,
    });
  });
});
