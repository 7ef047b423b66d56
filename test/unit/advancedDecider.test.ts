/** The voucher decider with advanced configs and validation rules: create, update, apply with stacking. */
import { expect } from 'chai';
import type { VoucherCommand } from '../../src/domain/voucher/commands.ts';
import type { VoucherCreated } from '../../src/domain/voucher/events.ts';
import { voucherDecider } from '../../src/domain/voucher/decide.ts';
import { advancedVoucherCreated } from '../fixtures/events.ts';
import { deciderSpecification } from '../support/deciderSpecification.ts';

const { given, fold } = deciderSpecification(voucherDecider);
type Cmd<T extends VoucherCommand['type']> = Extract<VoucherCommand, { type: T }>;
const NOW = new Date('2026-01-15T12:00:00.000Z');
const metadata = { now: NOW };
const V = 'v_1';

const tier = (min: number, max: number | null, discount = 5, discount_type = 'percentage') => ({
  min_value: min,
  max_value: max,
  discount,
  discount_type,
});
const TIERS = { tiers: [tier(0, 4999), tier(5000, null, 10)] };
const create = (
  voucherType: Cmd<'CreateVoucher'>['data']['voucherType'],
  config?: Record<string, unknown>,
  extra: Partial<Cmd<'CreateVoucher'>['data']> = {},
): Cmd<'CreateVoucher'> => ({
  type: 'CreateVoucher',
  data: { voucherId: V, code: 'ADV', voucherType, config, ...extra },
  metadata,
});
const created = (voucherType: VoucherCreated['data']['voucherType'], config: Record<string, unknown>): VoucherCreated =>
  advancedVoucherCreated(voucherType, config, { voucherId: V, code: 'ADV' });
const update = (data: Omit<Cmd<'UpdateVoucher'>['data'], 'voucherId'>): Cmd<'UpdateVoucher'> => ({
  type: 'UpdateVoucher',
  data: { voucherId: V, ...data },
  metadata,
});

describe('voucher decider: advanced types', () => {
  describe('CreateVoucher', () => {
    it('records a tiered voucher with its config', () => {
      given([])
        .when(create('tiered', TIERS))
        .then([
          {
            type: 'VoucherCreated',
            data: {
              voucherId: V,
              code: 'ADV',
              voucherType: 'tiered',
              value: undefined,
              currency: undefined,
              config: TIERS,
              conditions: {},
              createdAt: '2026-01-15T12:00:00Z',
            },
          },
        ]);
    });

    it('records validation_rules on any type', () => {
      const rules = [{ type: 'order_value', operator: 'gte', value: 1000 }];
      const [event] = given([])
        .when(create('percentage', undefined, { value: 10, validationRules: rules }))
        .run();
      expect((event as VoucherCreated).data.validationRules).to.deep.equal(rules);
    });

    const invalid: Array<[string, Cmd<'CreateVoucher'>, Record<string, unknown>]> = [
      [
        'overlapping tiers (shared edge)',
        create('tiered', { tiers: [tier(0, 5000), tier(5000, null)] }),
        { field: 'tiers' },
      ],
      ['unordered tiers', create('tiered', { tiers: [tier(5000, null), tier(0, 4999)] }), { field: 'tiers' }],
      [
        'an open tier before another',
        create('tiered', { tiers: [tier(0, null), tier(5000, 6000)] }),
        { field: 'tiers' },
      ],
      ['a tier with min_value above max_value', create('tiered', { tiers: [tier(600, 500)] }), { field: 'tiers[0]' }],
      [
        '51 tiers',
        create('tiered', { tiers: Array.from({ length: 51 }, (_, i) => tier(i * 10, i * 10 + 9)) }),
        { field: 'tiers' },
      ],
      [
        'a tier percentage above 100',
        create('tiered', { tiers: [tier(0, null, 100.5)] }),
        { field: 'tiers[0].discount' },
      ],
      [
        'a tier with an unknown discount_type',
        create('tiered', { tiers: [tier(0, null, 5, 'bonus')] }),
        { field: 'tiers[0].discount_type' },
      ],
      ['buy_quantity 0', create('bogo', { buy_quantity: 0, get_quantity: 1 }), { field: 'buy_quantity' }],
      ['get_quantity 0', create('bogo', { buy_quantity: 1, get_quantity: 0 }), { field: 'get_quantity' }],
      [
        'get_discount 150%',
        create('bogo', { buy_quantity: 1, get_quantity: 1, get_discount: 150 }),
        { field: 'get_discount' },
      ],
      [
        'an item both applicable and excluded',
        create('bogo', { buy_quantity: 1, get_quantity: 1, applicable_items: ['A'], excluded_items: ['A'] }),
        { field: 'excluded_items' },
      ],
      [
        'an unknown condition type',
        create('conditional', {
          conditions: [{ type: 'moon_phase', operator: 'eq', value: 'full' }],
          discount: 5,
          discount_type: 'percentage',
        }),
        { field: 'conditions[0].type' },
      ],
      [
        'an unknown operator',
        create('conditional', {
          conditions: [{ type: 'order_value', operator: 'between', value: 5 }],
          discount: 5,
          discount_type: 'percentage',
        }),
        { field: 'conditions[0].operator' },
      ],
      [
        'gt on a segment',
        create('conditional', {
          conditions: [{ type: 'customer_segment', operator: 'gt', value: 'vip' }],
          discount: 5,
          discount_type: 'percentage',
        }),
        { field: 'conditions[0].operator' },
      ],
      [
        'a registration date that is not a timestamp',
        create('conditional', {
          conditions: [{ type: 'customer_registration_date', operator: 'gte', value: 'last year' }],
          discount: 5,
          discount_type: 'percentage',
        }),
        { field: 'conditions[0].value' },
      ],
      [
        'no conditions',
        create('conditional', { conditions: [], discount: 5, discount_type: 'percentage' }),
        { field: 'conditions' },
      ],
      [
        'stackable_with naming an unknown type',
        create('stackable', {
          base_discount: 5,
          base_discount_type: 'percentage',
          stack_rules: { stackable_with: ['loyalty'] },
        }),
        { field: 'stack_rules.stackable_with[0]' },
      ],
      [
        'a type both stackable_with and excluded',
        create('stackable', {
          base_discount: 5,
          base_discount_type: 'percentage',
          stack_rules: { stackable_with: ['fixed'], excluded_types: ['fixed'] },
        }),
        { field: 'stack_rules.excluded_types' },
      ],
      [
        'max_total_discount above 100',
        create('stackable', {
          base_discount: 5,
          base_discount_type: 'percentage',
          stack_rules: { max_total_discount: 120 },
        }),
        { field: 'stack_rules.max_total_discount' },
      ],
      [
        'a fixed base_discount of 0',
        create('stackable', { base_discount: 0, base_discount_type: 'fixed' }),
        { field: 'base_discount' },
      ],
      [
        'an unknown validation rule type',
        create('fixed', undefined, { value: 100, validationRules: [{ type: 'weather', value: 1 }] }),
        { field: 'validation_rules[0].type' },
      ],
      [
        'an items rule with min_quantity above max_quantity',
        create('fixed', undefined, {
          value: 100,
          validationRules: [{ type: 'items', rules: [{ item_id: 'A', min_quantity: 5, max_quantity: 2 }] }],
        }),
        { field: 'validation_rules[0].rules[0]' },
      ],
      [
        'a customer rule naming nothing',
        create('fixed', undefined, { value: 100, validationRules: [{ type: 'customer', rules: [{}] }] }),
        { field: 'validation_rules[0].rules[0]' },
      ],
      [
        'an order_value rule with an unknown operator',
        create('fixed', undefined, {
          value: 100,
          validationRules: [{ type: 'order_value', operator: 'ne', value: 5 }],
        }),
        { field: 'validation_rules[0].operator' },
      ],
    ];
    for (const [name, command, details] of invalid) {
      it(`INVALID_CONFIGURATION: ${name}`, () => {
        const error = given([]).when(command).thenThrows('INVALID_CONFIGURATION', details);
        expect(error.details).to.have.all.keys('field', 'issue', 'suggestion');
      });
    }

    it('INVALID_REQUEST: config missing for an advanced type, present for a basic one, value on an advanced one', () => {
      given([]).when(create('bogo')).thenThrows('INVALID_REQUEST', { field: 'config' });
      given([])
        .when(create('fixed', { tiers: [] }, { value: 100 }))
        .thenThrows('INVALID_REQUEST', { field: 'config' });
      given([])
        .when(create('tiered', TIERS, { value: 10 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });
  });

  describe('UpdateVoucher', () => {
    it('replaces the config whole and keeps it in the state', () => {
      const next = { tiers: [tier(0, null, 7)] };
      given([created('tiered', TIERS)])
        .when(update({ config: next }))
        .then([
          {
            type: 'VoucherUpdated',
            data: {
              voucherId: V,
              value: undefined,
              currency: undefined,
              conditions: undefined,
              status: 'active',
              config: next,
              updatedAt: '2026-01-15T12:00:00Z',
            },
          },
        ]);
      const state = fold([
        created('tiered', TIERS),
        {
          type: 'VoucherUpdated',
          data: { voucherId: V, status: 'active', config: next, updatedAt: '2026-01-15T12:00:00Z' },
        },
      ]);
      expect(state!.config).to.deep.equal(next);
    });

    it('validates a new config like create (INVALID_CONFIGURATION, also for shape)', () => {
      given([created('tiered', TIERS)])
        .when(update({ config: { tiers: [tier(0, 100), tier(50, null)] } }))
        .thenThrows('INVALID_CONFIGURATION', { field: 'tiers' });
      given([created('bogo', { buy_quantity: 1, get_quantity: 1 })])
        .when(update({ config: { buy_quantity: 'two', get_quantity: 1 } }))
        .thenThrows('INVALID_CONFIGURATION', { field: 'buy_quantity' });
    });

    it('a config on a basic voucher: INVALID_REQUEST', () => {
      const basic: VoucherCreated = {
        type: 'VoucherCreated',
        data: {
          voucherId: V,
          code: 'ADV',
          voucherType: 'fixed',
          value: 100,
          conditions: {},
          createdAt: '2026-01-01T00:00:00Z',
        },
      };
      given([basic])
        .when(update({ config: { tiers: [] } }))
        .thenThrows('INVALID_REQUEST', { field: 'config' });
    });

    it('a value on an advanced voucher: INVALID_REQUEST on value (its discount is in config)', () => {
      given([created('tiered', TIERS)])
        .when(update({ value: 10 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });

    it('validation_rules: replaced, null removes them', () => {
      const rules = [{ type: 'customer', rules: [{ segment: 'vip' }] }];
      const withRules = fold([
        created('tiered', TIERS),
        {
          type: 'VoucherUpdated',
          data: { voucherId: V, status: 'active', validationRules: rules, updatedAt: '2026-01-15T12:00:00Z' },
        },
      ]);
      expect(withRules!.validationRules).to.deep.equal(rules);
      const removed = fold([
        created('tiered', TIERS),
        {
          type: 'VoucherUpdated',
          data: { voucherId: V, status: 'active', validationRules: rules, updatedAt: '2026-01-15T12:00:00Z' },
        },
        {
          type: 'VoucherUpdated',
          data: { voucherId: V, status: 'active', validationRules: null, updatedAt: '2026-01-15T12:00:00Z' },
        },
      ]);
      expect(removed!.validationRules).to.equal(undefined);
      given([created('tiered', TIERS)])
        .when(update({ validationRules: [{ type: 'items', rules: [{ category: 'x', item_id: 'y' }] }] }))
        .thenThrows('INVALID_CONFIGURATION', { field: 'validation_rules[0].rules[0]' });
    });
  });

  describe('ApplyVoucher', () => {
    const apply = (over: Partial<Cmd<'ApplyVoucher'>['data']> = {}): Cmd<'ApplyVoucher'> => ({
      type: 'ApplyVoucher',
      data: {
        voucherId: V,
        applicationId: 'va_1',
        orderId: 'o-1',
        order: { value: 10_000 },
        orderFingerprint: 'of',
        customerFingerprint: 'cf',
        ...over,
      },
      metadata,
    });
    const stackable = created('stackable', { base_discount: 15, base_discount_type: 'percentage', priority: 2 });

    it("prices a stackable voucher on the amount the order's earlier vouchers left", () => {
      const [event] = given([stackable])
        .when(
          apply({
            orderVouchers: [
              {
                voucherId: 'v_0',
                code: 'FIRST',
                type: 'fixed',
                priority: 0,
                applicationId: 'va_0',
                orderValue: 10_000,
                discountAmount: 1000,
              },
            ],
          }),
        )
        .run();
      expect(event!.type).to.equal('VoucherApplied');
      expect(event!.data).to.include({ discountAmount: 1350, finalAmount: 7650 }); // 10000 − 1000 − 1350
    });

    it('refuses a non-stackable voucher on an order that carries one: STACKING_CONFLICT', () => {
      given([created('tiered', TIERS)])
        .when(
          apply({
            orderVouchers: [
              {
                voucherId: 'v_0',
                code: 'FIRST',
                type: 'fixed',
                priority: 0,
                applicationId: 'va_0',
                orderValue: 10_000,
                discountAmount: 1000,
              },
            ],
          }),
        )
        .thenThrows('STACKING_CONFLICT', { conflicting_voucher: 'FIRST', conflict_reason: 'not_stackable' });
    });

    it('validation_rules not met: CONDITION_NOT_MET with each failed rule; met: VoucherApplied', () => {
      const ruled: VoucherCreated = {
        type: 'VoucherCreated',
        data: {
          voucherId: V,
          code: 'ADV',
          voucherType: 'fixed',
          value: 500,
          conditions: {},
          createdAt: '2026-01-01T00:00:00Z',
          validationRules: [
            { type: 'order_value', operator: 'gte', value: 3000 },
            { type: 'customer', rules: [{ segment: 'vip' }] },
          ],
        },
      };
      given([ruled])
        .when(apply({ order: { value: 2999 }, customer: { id: 'c1', segment: 'vip' } }))
        .thenThrows('CONDITION_NOT_MET', {
          failed_conditions: [{ type: 'order_value', expected: { operator: 'gte', value: 3000 }, actual: 2999 }],
          required_conditions: 2,
          met_conditions: 1,
        });
      const [event] = given([ruled])
        .when(apply({ order: { value: 3000 }, customer: { id: 'c1', segment: 'vip' } }))
        .run();
      expect(event!.type).to.equal('VoucherApplied');
      expect(event!.data).to.include({ discountAmount: 500, finalAmount: 2500 });
    });

    it('a tiered order value in no tier: VOUCHER_INVALID no_matching_tier', () => {
      given([created('tiered', { tiers: [tier(5000, null)] })])
        .when(apply({ order: { value: 100 } }))
        .thenThrows('VOUCHER_INVALID', { reason: 'no_matching_tier' });
    });
  });
});
