/**
 * HTTP: the advanced voucher types (bogo, tiered, conditional, stackable) and validation_rules:
 * create, update, validate, apply, and every error they can give.
 */
import { expect } from 'chai';
import { applyBody, item, validateBody } from '../fixtures/orders.ts';
import {
  bogoVoucher,
  conditionalVoucher,
  fixedVoucher,
  percentageVoucher,
  tier,
  tieredVoucher,
} from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';

const TIERS = [tier(0, 4999, 5), tier(5000, 9999, 10), tier(10000, null, 1500, 'fixed')];

describe('HTTP advanced voucher types', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  const validate = (...args: Parameters<typeof validateBody>) =>
    service.post('/v1/vouchers/validate', validateBody(...args));

  describe('POST /v1/vouchers', () => {
    const configs: Array<[string, Record<string, unknown>]> = [
      [
        'bogo',
        {
          buy_quantity: 2,
          get_quantity: 1,
          get_discount: 100,
          get_discount_type: 'percentage',
          applicable_items: ['TEE'],
          max_uses_per_order: 2,
        },
      ],
      ['tiered', { tiers: TIERS, currency: 'USD' }],
      [
        'conditional',
        {
          conditions: [{ type: 'customer_segment', operator: 'eq', value: 'vip' }],
          discount: 20,
          discount_type: 'percentage',
          all_conditions_required: true,
        },
      ],
      [
        'stackable',
        {
          base_discount: 10,
          base_discount_type: 'percentage',
          stack_rules: { max_stack_count: 3, max_total_discount: 30, stackable_with: ['percentage', 'stackable'] },
          priority: 1,
        },
      ],
    ];
    for (const [type, config] of configs) {
      it(`creates a ${type} voucher: 201 with id, code, type, config, status, usage_count, created_at`, async () => {
        const res = await service.post('/v1/vouchers', { code: `NEW_${type.toUpperCase()}`, type, config });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.body).to.include({
          code: `NEW_${type.toUpperCase()}`,
          type,
          status: 'active',
          usage_count: 0,
          created_at: '2026-01-15T12:00:00Z',
          value: null,
        });
        expect(res.body.id).to.match(/^v_/);
        expect(res.body.config).to.deep.equal(config);
        expect((await service.get(`/v1/vouchers/${res.body.id}`)).body.config).to.deep.equal(config);
      });
    }

    it('overlapping tiers: 400 INVALID_CONFIGURATION with field "tiers" and nothing created', async () => {
      const res = await service.post(
        '/v1/vouchers',
        tieredVoucher('OVERLAP', { tiers: [tier(0, 5000, 5), tier(5000, null, 10)] }),
      );
      expectError(res, 400, 'INVALID_CONFIGURATION', {
        field: 'tiers',
        issue: 'overlap: tier 0 (0 to 5000) reaches tier 1 (from 5000)',
        suggestion: 'end tier 0 at 4999 (bounds are inclusive)',
      });
      expect((await validate('OVERLAP', { value: 100 })).status).to.equal(404);
    });

    const invalid: Array<[string, string, Record<string, unknown>, string]> = [
      ['a tier with min_value above max_value', 'tiered', { tiers: [tier(900, 100, 5)] }, 'tiers[0]'],
      [
        'more than 50 tiers',
        'tiered',
        { tiers: Array.from({ length: 51 }, (_, i) => tier(i * 100, i * 100 + 99, 5)) },
        'tiers',
      ],
      ['buy_quantity 0', 'bogo', { buy_quantity: 0, get_quantity: 1 }, 'buy_quantity'],
      [
        'a percentage above 100',
        'conditional',
        {
          conditions: [{ type: 'order_value', operator: 'gte', value: 1 }],
          discount: 101,
          discount_type: 'percentage',
        },
        'discount',
      ],
      [
        'an unknown condition type',
        'conditional',
        {
          conditions: [{ type: 'weekday', operator: 'eq', value: 'monday' }],
          discount: 5,
          discount_type: 'percentage',
        },
        'conditions[0].type',
      ],
      [
        'an unknown operator',
        'conditional',
        { conditions: [{ type: 'order_value', operator: 'ne', value: 1 }], discount: 5, discount_type: 'percentage' },
        'conditions[0].operator',
      ],
      [
        'a stackable type list naming an unknown type',
        'stackable',
        { base_discount: 5, base_discount_type: 'percentage', stack_rules: { excluded_types: ['coupon'] } },
        'stack_rules.excluded_types[0]',
      ],
    ];
    for (const [name, type, config, field] of invalid) {
      it(`${name}: 400 INVALID_CONFIGURATION naming ${field}`, async () => {
        const res = await service.post('/v1/vouchers', { code: 'BADCFG', type, config });
        expectError(res, 400, 'INVALID_CONFIGURATION');
        expect(res.body.error.details.field).to.equal(field);
        expect(res.body.error.details.issue).to.be.a('string').that.is.not.empty;
        expect(res.body.error.details.suggestion).to.be.a('string').that.is.not.empty;
      });
    }

    it('validation_rules with an unknown rule type: 400 INVALID_CONFIGURATION', async () => {
      const res = await service.post(
        '/v1/vouchers',
        fixedVoucher('BADRULE', { validation_rules: [{ type: 'weather' }] }),
      );
      expectError(res, 400, 'INVALID_CONFIGURATION');
      expect(res.body.error.details.field).to.equal('validation_rules[0].type');
    });

    it('an unknown value is shown cut to 40 characters and a member name to 100, not echoed whole: a 900 KB one gives a short answer', async () => {
      const res = await service.post(
        '/v1/vouchers',
        fixedVoucher('LONGRULE', { validation_rules: [{ type: `weather${'\u0000'.repeat(150_000)}` }] }),
      );
      expectError(res, 400, 'INVALID_CONFIGURATION');
      expect(res.body.error.details.issue).to.equal(
        `is not a known rule type: ${JSON.stringify(`weather${'\u0000'.repeat(33)}`)}… (150007 characters)`,
      );
      expect(JSON.stringify(res.body).length).to.be.lessThan(2_000);
      const bogo = await service.createVoucher(bogoVoucher('LONGCFG'));
      const put = await service.put(`/v1/vouchers/${bogo.id}`, {
        config: { buy_quantity: 1, get_quantity: 1, get_discount_type: { a: 'x'.repeat(900_000) } },
      });
      expectError(put, 400, 'INVALID_CONFIGURATION');
      expect(put.body.error.details.issue).to.equal('is not a known discount type: an object');
      expect(JSON.stringify(put.body).length).to.be.lessThan(2_000);
      // an unknown member of an updated config (checked by the domain, not the schema): its name cut
      const member = await service.put(`/v1/vouchers/${bogo.id}`, {
        config: { buy_quantity: 1, get_quantity: 1, ['m'.repeat(900_000)]: 1 },
      });
      expectError(member, 400, 'INVALID_CONFIGURATION');
      expect(member.body.error.details.field).to.equal(`${'m'.repeat(100)}… (900000 characters)`);
      expect(JSON.stringify(member.body).length).to.be.lessThan(2_000);
    });

    it('validation_rules of the wrong shape: 400 INVALID_REQUEST naming the member', async () => {
      const res = await service.post(
        '/v1/vouchers',
        fixedVoucher('BADRULE2', { validation_rules: [{ type: 'order_value', operator: 'gte', value: 'lots' }] }),
      );
      expectError(res, 400, 'INVALID_REQUEST', [
        {
          field: 'validation_rules[0].value',
          message: 'must be a whole number of cents (an integer: 19.99 is sent as 1999)',
        },
      ]);
    });
  });

  describe('POST /v1/vouchers/validate', () => {
    before(async () => {
      await service.createVoucher(
        bogoVoucher('TEE3FOR2', { buy_quantity: 2, get_quantity: 1, applicable_items: ['TEE', 'POLO'] }),
      );
      await service.createVoucher(tieredVoucher('TIERS', { tiers: TIERS }));
      await service.createVoucher(
        conditionalVoucher('VIPONLY', {
          conditions: [
            { type: 'customer_segment', operator: 'eq', value: 'vip' },
            { type: 'order_value', operator: 'gte', value: 5000 },
          ],
          discount: 20,
          discount_type: 'percentage',
        }),
      );
      await service.createVoucher(
        percentageVoucher('RULED', {
          value: 10,
          validation_rules: [
            { type: 'order_value', operator: 'gte', value: 3000 },
            { type: 'customer', rules: [{ min_orders: 2 }] },
          ],
        }),
      );
    });

    it('bogo: 3 for 2 on tees and polos, the cheapest of each group free, exact cents and lines', async () => {
      const order = {
        value: 9_500,
        currency: 'USD',
        items: [item('TEE', 2000, 2), item('POLO', 1500, 3), item('CAP', 500)],
      };
      // units 2000, 2000, 1500 | 1500, 1500 (left over) → 1500 off, on the POLO line
      const res = await validate('TEE3FOR2', order);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.include({ discount_amount: 1500, final_amount: 8000, currency: 'USD' });
      expect(res.body.applied_to).to.deep.equal([
        { item_id: 'POLO', original_price: 4500, discount_amount: 1500, final_price: 3000 },
      ]);
      expect(res.body.validation_details).to.deep.equal({
        min_order_value_met: true,
        usage_limit_not_exceeded: true,
        valid_date_range: true,
        bogo_eligible_items: 5,
        bogo_applied_items: 1,
        discount_applied: 1500,
        remaining_eligibility: 1,
      });
      expect(res.body.voucher).to.deep.include({ code: 'TEE3FOR2', type: 'bogo', value: null });
    });

    it('bogo without enough units: 400 VOUCHER_INVALID insufficient_quantity', async () => {
      expectError(await validate('TEE3FOR2', { value: 4000, items: [item('TEE', 2000, 2)] }), 400, 'VOUCHER_INVALID', {
        reason: 'insufficient_quantity',
        min_quantity: 3,
        current_quantity: 2,
      });
    });

    it('tiered: value exactly on a tier edge takes that tier', async () => {
      const res = await validate('TIERS', { value: 5000 });
      expect(res.body).to.deep.include({ discount_amount: 500, final_amount: 4500 });
      expect(res.body.validation_details).to.deep.include({
        order_value: 5000,
        applicable_tier: tier(5000, 9999, 10),
        discount_amount: 500,
      });
      expect((await validate('TIERS', { value: 10_000 })).body.discount_amount).to.equal(1500);
    });

    it('tiered with no matching tier: 400 VOUCHER_INVALID no_matching_tier', async () => {
      await service.createVoucher(tieredVoucher('TIERGAP', { tiers: [tier(5000, null, 10)] }));
      expectError(await validate('TIERGAP', { value: 4999 }), 400, 'VOUCHER_INVALID', {
        reason: 'no_matching_tier',
        current_value: 4999,
        currency: null,
        tiers: [tier(5000, null, 10)],
      });
    });

    it('conditional met: 20% of 7499 = 1500, with the conditional details', async () => {
      const res = await validate('VIPONLY', { value: 7499 }, { id: 'c1', segment: 'vip' });
      expect(res.body).to.deep.include({ discount_amount: 1500, final_amount: 5999 });
      expect(res.body.validation_details).to.deep.include({
        conditions_met: ['customer_segment', 'order_value'],
        conditions_failed: [],
        all_conditions_satisfied: true,
        discount_applicable: true,
        customer_eligible: true,
      });
    });

    it('conditional unmet: 400 CONDITION_NOT_MET with failed_conditions, required and met counts', async () => {
      expectError(
        await validate('VIPONLY', { value: 7499 }, { id: 'c2', segment: 'regular' }),
        400,
        'CONDITION_NOT_MET',
        {
          failed_conditions: [
            { type: 'customer_segment', expected: { operator: 'eq', value: 'vip' }, actual: 'regular' },
          ],
          required_conditions: 2,
          met_conditions: 1,
        },
      );
    });

    it('validation_rules unmet: 400 CONDITION_NOT_MET; met: the discount', async () => {
      expectError(await validate('RULED', { value: 2999 }, { orders_count: 1 }), 400, 'CONDITION_NOT_MET', {
        failed_conditions: [
          { type: 'order_value', expected: { operator: 'gte', value: 3000 }, actual: 2999 },
          { type: 'customer_orders_count', expected: { operator: 'gte', value: 2 }, actual: 1 },
        ],
        required_conditions: 2,
        met_conditions: 0,
      });
      const ok = await validate('RULED', { value: 3001 }, { orders_count: 2 });
      expect(ok.body).to.deep.include({ discount_amount: 300, final_amount: 2701 });
      expect(ok.body.conditions_met).to.include('validation_rules');
    });
  });

  describe('PUT /v1/vouchers/{id} with config and validation_rules', () => {
    it('replaces the config; the next validate uses it', async () => {
      const v = await service.createVoucher(tieredVoucher('TIERPUT', { tiers: TIERS }));
      const res = await service.put(`/v1/vouchers/${v.id}`, { config: { tiers: [tier(0, null, 25)] } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.config).to.deep.equal({ tiers: [tier(0, null, 25)] });
      expect((await validate('TIERPUT', { value: 1000 })).body.discount_amount).to.equal(250);
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.config).to.deep.equal({ tiers: [tier(0, null, 25)] });
    });

    it('an invalid config: 400 INVALID_CONFIGURATION and the stored one stays', async () => {
      const v = await service.createVoucher(bogoVoucher('BOGOPUT', { buy_quantity: 1, get_quantity: 1 }));
      expectError(
        await service.put(`/v1/vouchers/${v.id}`, { config: { buy_quantity: 1, get_quantity: -1 } }),
        400,
        'INVALID_CONFIGURATION',
      );
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.config).to.deep.equal({
        buy_quantity: 1,
        get_quantity: 1,
      });
    });

    it('a config on a percentage voucher: 400 INVALID_REQUEST', async () => {
      const v = await service.createVoucher(percentageVoucher('PCTPUT', { value: 5 }));
      expectError(await service.put(`/v1/vouchers/${v.id}`, { config: { tiers: [] } }), 400, 'INVALID_REQUEST');
    });

    it('validation_rules are set, shown, and removed with null', async () => {
      const v = await service.createVoucher(fixedVoucher('RULEPUT', { value: 100 }));
      const rules = [{ type: 'items', rules: [{ category: 'shoes', min_value: 5000 }] }];
      expect(
        (await service.put(`/v1/vouchers/${v.id}`, { validation_rules: rules })).body.validation_rules,
      ).to.deep.equal(rules);
      expectError(
        await validate('RULEPUT', { value: 6000, items: [item('S', 4000, 1, { category: 'shoes' })] }),
        400,
        'CONDITION_NOT_MET',
      );
      const cleared = await service.put(`/v1/vouchers/${v.id}`, { validation_rules: null });
      expect(cleared.body).to.not.have.property('validation_rules');
      expect((await validate('RULEPUT', { value: 6000 })).body.discount_amount).to.equal(100);
    });
  });

  describe('POST /v1/vouchers/apply', () => {
    it('applies a tiered voucher with the same cents as validate and records them', async () => {
      const v = await service.createVoucher(tieredVoucher('TIERAPPLY', { tiers: TIERS }));
      const order = { value: 7499, currency: 'USD' };
      const validated = await validate('TIERAPPLY', order);
      const res = await service.post('/v1/vouchers/apply', applyBody('TIERAPPLY', 'tier-1', order));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(res.body).to.include({ discount_amount: 750, final_amount: 6749 });
      expect(res.body.discount_amount).to.equal(validated.body.discount_amount);
      const applied = (await service.sandbox.events.readStream(`voucher-${v.id}`)).filter(
        (e) => e.type === 'VoucherApplied',
      );
      expect(applied.map((e) => (e.data as any).discountAmount)).to.deep.equal([750]);
      const orderEvents = (await service.sandbox.events.readStream('order-tier-1')).map((e) => [
        e.type,
        (e.data as any).discountAmount,
      ]);
      expect(orderEvents).to.deep.equal([['OrderVoucherConfirmed', 750]]);
    });

    it('an apply that fails on the voucher (CONDITION_NOT_MET) leaves the order stream untouched', async () => {
      await service.createVoucher(
        conditionalVoucher('VIPAPPLY', { conditions: [{ type: 'customer_segment', operator: 'eq', value: 'vip' }] }),
      );
      const res = await service.post('/v1/vouchers/apply', applyBody('VIPAPPLY', 'vip-1', {}, { segment: 'new' }));
      expectError(res, 400, 'CONDITION_NOT_MET');
      expect(await service.sandbox.events.readStream('order-vip-1')).to.deep.equal([]);
    });
  });
});
