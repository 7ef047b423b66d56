import { AssertionError, expect } from 'chai';
import type { Order } from '../../src/domain/discount/types.ts';
import type { VoucherCommand } from '../../src/domain/voucher/commands.ts';
import type {
  Conditions,
  VoucherApplicationRolledBack,
  VoucherApplied,
  VoucherStreamEvent,
  VoucherCreated,
  VoucherEvent,
} from '../../src/domain/voucher/events.ts';
import {
  CODE,
  VOUCHER_ID as V,
  voucherApplicationRolledBack,
  voucherApplied,
  voucherCreated,
  voucherDeactivated,
  voucherExpired,
  voucherUpdated,
} from '../fixtures/events.ts';
import { voucherDecider } from '../../src/domain/voucher/decide.ts';
import { deciderSpecification } from '../support/deciderSpecification.ts';

const { given, fold } = deciderSpecification(voucherDecider);
type Cmd<T extends VoucherCommand['type']> = Extract<VoucherCommand, { type: T }>;

const NOW = new Date('2026-01-15T12:00:00.000Z');
const NOW_ISO = '2026-01-15T12:00:00Z';
const metadata = { now: NOW };

// ---- events (the given) ----
const created = voucherCreated;
const withConditions = (conditions: Conditions, over: Partial<VoucherCreated['data']> = {}) =>
  created({ conditions, ...over });
const applied = (applicationId: string, orderId: string, customerId?: string): VoucherApplied =>
  voucherApplied({
    applicationId,
    orderId,
    customerId,
    orderFingerprint: `of-${orderId}`,
    customerFingerprint: `cf-${customerId ?? 'none'}`,
    appliedAt: '2026-01-14T10:00:00Z',
  });
const rolledBack = (applicationId: string, orderId: string, customerId?: string): VoucherApplicationRolledBack =>
  voucherApplicationRolledBack({
    applicationId,
    orderId,
    customerId,
    appliedAt: '2026-01-14T10:00:00Z',
    rolledBackAt: '2026-01-14T11:00:00Z',
  });
const deactivated = voucherDeactivated({ deactivatedAt: '2026-01-10T00:00:00Z' });
const PAST = '2026-01-10T00:00:00Z';
const FUTURE = '2026-03-01T00:00:00Z';
const expired = voucherExpired({ validUntil: PAST, expiredAt: '2026-01-10T00:01:00Z' });

// ---- commands ----
const create = (data: Partial<Cmd<'CreateVoucher'>['data']> = {}): Cmd<'CreateVoucher'> => ({
  type: 'CreateVoucher',
  data: { voucherId: V, code: CODE, voucherType: 'percentage', value: 15, currency: 'EUR', ...data },
  metadata,
});
const update = (data: Omit<Cmd<'UpdateVoucher'>['data'], 'voucherId'>, voucherId = V): Cmd<'UpdateVoucher'> => ({
  type: 'UpdateVoucher',
  data: { voucherId, ...data },
  metadata,
});
const deactivate = (voucherId = V): Cmd<'DeactivateVoucher'> => ({
  type: 'DeactivateVoucher',
  data: { voucherId },
  metadata,
});
const expire = (voucherId = V): Cmd<'ExpireVoucher'> => ({ type: 'ExpireVoucher', data: { voucherId }, metadata });
const rollback = (applicationId: string, reason?: string): Cmd<'RollbackApplication'> => ({
  type: 'RollbackApplication',
  data: { voucherId: V, applicationId, reason },
  metadata,
});

/** 2 × 1_999 + 1 × 3_001 = 6_999 of lines, + 500 shipping. */
const ORDER: Order = {
  value: 7_499,
  currency: 'EUR',
  items: [
    { id: 'A', price: 1_999, quantity: 2 },
    { id: 'B', price: 3_001, quantity: 1 },
  ],
};
const CUSTOMER = { id: 'cus_1', segment: 'vip', region: 'EU' };
const apply = (data: Partial<Cmd<'ApplyVoucher'>['data']> = {}): Cmd<'ApplyVoucher'> => ({
  type: 'ApplyVoucher',
  data: {
    voucherId: V,
    applicationId: 'va_new',
    orderId: 'ord_new',
    order: ORDER,
    customer: CUSTOMER,
    orderFingerprint: 'of-ord_new',
    customerFingerprint: 'cf-cus_1',
    ...data,
  },
  metadata,
});

/** The VoucherApplied that `apply()` decides on a 15% EUR voucher, computed by hand:
 *  base 6_999 (shipping not discounted); 15% = 1_049.85 → 1_050 (half-up); final 7_499 − 1_050 = 6_449;
 *  shares: A 1_050×3_998/6_999 = 599.79, B 1_050×3_001/6_999 = 450.21 → floors 599 + 450 = 1_049,
 *  the leftover cent goes to the larger remainder (A) → A 600, B 450. */
const appliedByHand = (over: Partial<VoucherApplied['data']> = {}): VoucherApplied =>
  voucherApplied({
    applicationId: 'va_new',
    orderId: 'ord_new',
    customerId: 'cus_1',
    customerSegment: 'vip',
    customerRegion: 'EU',
    orderValue: 7_499,
    orderSummary: { itemCount: 2, itemsValue: 6_999, appliedLineCount: 2, appliedLinesValue: 6_999 },
    discountAmount: 1_050,
    finalAmount: 6_449,
    appliedTo: [
      { item_id: 'A', original_price: 3_998, discount_amount: 600, final_price: 3_398 },
      { item_id: 'B', original_price: 3_001, discount_amount: 450, final_price: 2_551 },
    ],
    orderFingerprint: 'of-ord_new',
    customerFingerprint: 'cf-cus_1',
    appliedAt: NOW_ISO,
    ...over,
  });

const updated = (
  over: Partial<{
    value: number;
    currency: string | null;
    conditions: Conditions;
    status: 'active' | 'inactive' | 'expired';
  }>,
) =>
  voucherUpdated({
    value: over.value,
    currency: over.currency,
    conditions: over.conditions,
    status: over.status ?? 'active',
    updatedAt: NOW_ISO,
  });

describe('voucher decider', () => {
  describe('CreateVoucher', () => {
    it('records VoucherCreated with the creation time of the command', () => {
      given([])
        .when(create({ conditions: { max_uses: 10, valid_until: FUTURE } }))
        .then([
          {
            type: 'VoucherCreated',
            data: {
              voucherId: V,
              code: CODE,
              voucherType: 'percentage',
              value: 15,
              currency: 'EUR',
              config: undefined,
              conditions: { max_uses: 10, valid_until: FUTURE },
              createdAt: NOW_ISO,
            },
          },
        ]);
    });
    it('defaults conditions to {} and accepts the boundaries 100% and 100000000 cents', () => {
      given([])
        .when(create({ value: 100, currency: undefined }))
        .then([
          {
            type: 'VoucherCreated',
            data: {
              voucherId: V,
              code: CODE,
              voucherType: 'percentage',
              value: 100,
              currency: undefined,
              config: undefined,
              conditions: {},
              createdAt: NOW_ISO,
            },
          },
        ]);
      given([])
        .when(create({ voucherType: 'fixed', value: 100_000_000 }))
        .then([
          {
            type: 'VoucherCreated',
            data: {
              voucherId: V,
              code: CODE,
              voucherType: 'fixed',
              value: 100_000_000,
              currency: 'EUR',
              config: undefined,
              conditions: {},
              createdAt: NOW_ISO,
            },
          },
        ]);
    });
    it('rejects a percentage above 100', () => {
      given([])
        .when(create({ value: 100.01 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });
    it('rejects a percentage with more than 2 decimals', () => {
      given([])
        .when(create({ value: 12.345 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });
    it('rejects a negative percentage', () => {
      given([])
        .when(create({ value: -1 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });
    for (const value of [10.5, 0, 100_000_001]) {
      it(`rejects the fixed value ${value}`, () => {
        given([])
          .when(create({ voucherType: 'fixed', value }))
          .thenThrows('INVALID_REQUEST', { field: 'value' });
      });
    }
    it('rejects a missing value for percentage and fixed', () => {
      given([])
        .when(create({ value: undefined }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
      given([])
        .when(create({ voucherType: 'fixed', value: undefined }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });
    it('rejects valid_from equal to or after valid_until', () => {
      given([])
        .when(create({ conditions: { valid_from: FUTURE, valid_until: FUTURE } }))
        .thenThrows('INVALID_REQUEST', { field: 'conditions.valid_until' });
      given([])
        .when(create({ conditions: { valid_from: FUTURE, valid_until: PAST } }))
        .thenThrows('INVALID_REQUEST', { field: 'conditions.valid_until' });
    });
    it('rejects a voucher that already exists', () => {
      given([created()]).when(create()).thenThrows('DUPLICATE_VOUCHER_CODE', { code: CODE, voucher_id: V });
    });
  });

  describe('UpdateVoucher', () => {
    it('records the new value and keeps the status', () => {
      given([created()])
        .when(update({ value: 30 }))
        .then([updated({ value: 30 })]);
    });
    it('merges conditions: members not sent keep their stored values', () => {
      given([withConditions({ max_uses: 10, min_order_value: 5_000 })])
        .when(update({ conditions: { max_uses: 20 } }))
        .then([updated({ conditions: { max_uses: 20, min_order_value: 5_000 } })]);
    });
    it('a condition sent as null is removed', () => {
      given([withConditions({ max_uses: 10, min_order_value: 5_000 })])
        .when(update({ conditions: { min_order_value: null } }))
        .then([updated({ conditions: { max_uses: 10 } })]);
    });
    it('currency null removes the currency', () => {
      given([created()])
        .when(update({ currency: null }))
        .then([updated({ currency: null })]);
    });
    it('status inactive and back to active', () => {
      given([created()])
        .when(update({ status: 'inactive' }))
        .then([updated({ status: 'inactive' })]);
      given([created(), deactivated])
        .when(update({ status: 'active' }))
        .then([updated({ status: 'active' })]);
    });
    it('an update without status keeps an inactive voucher inactive', () => {
      given([created(), deactivated])
        .when(update({ value: 20 }))
        .then([updated({ value: 20, status: 'inactive' })]);
    });
    it('an expired voucher is revived when valid_until moves into the future', () => {
      given([withConditions({ valid_until: PAST, max_uses: 5 }), expired])
        .when(update({ conditions: { valid_until: FUTURE } }))
        .then([updated({ conditions: { valid_until: FUTURE, max_uses: 5 }, status: 'active' })]);
    });
    it('an expired voucher is revived when valid_until is removed', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ conditions: { valid_until: null } }))
        .then([updated({ conditions: {}, status: 'active' })]);
    });
    it('an expired voucher stays expired when valid_until stays in the past', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ conditions: { valid_until: '2026-01-12T00:00:00Z' } }))
        .then([updated({ conditions: { valid_until: '2026-01-12T00:00:00Z' }, status: 'expired' })]);
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ value: 40 }))
        .then([updated({ value: 40, status: 'expired' })]);
    });
    it('rejects status active while valid_until has passed (recorded expired or expired by the clock)', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ status: 'active' }))
        .thenThrows('INVALID_REQUEST', { field: 'status' });
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ status: 'active', conditions: { valid_until: '2026-01-12T00:00:00Z' } }))
        .thenThrows('INVALID_REQUEST', { field: 'status' });
      given([withConditions({ valid_until: PAST }), deactivated])
        .when(update({ status: 'active' }))
        .thenThrows('INVALID_REQUEST', { field: 'status' });
    });
    it('status active together with a future valid_until revives an expired voucher', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ status: 'active', conditions: { valid_until: FUTURE } }))
        .then([updated({ conditions: { valid_until: FUTURE }, status: 'active' })]);
    });
    it('an update that changes nothing decides nothing', () => {
      given([created()]).when(update({})).thenNothing();
    });
    it('an explicit inactive wins over a revival', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(update({ conditions: { valid_until: FUTURE }, status: 'inactive' }))
        .then([updated({ conditions: { valid_until: FUTURE }, status: 'inactive' })]);
    });
    it('rejects an unknown voucher', () => {
      given([])
        .when(update({ value: 30 }, 'v_missing'))
        .thenThrows('VOUCHER_NOT_FOUND', { voucher_id: 'v_missing' });
    });
    it('rejects a percentage above 100, and a fixed value of 0', () => {
      given([created()])
        .when(update({ value: 101 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
      given([created({ voucherType: 'fixed', value: 500 })])
        .when(update({ value: 0 }))
        .thenThrows('INVALID_REQUEST', { field: 'value' });
    });
    it('rejects a merge that puts valid_from at or after valid_until', () => {
      given([withConditions({ valid_until: FUTURE })])
        .when(update({ conditions: { valid_from: '2026-04-01T00:00:00Z' } }))
        .thenThrows('INVALID_REQUEST', { field: 'conditions.valid_until' });
    });
  });

  describe('DeactivateVoucher', () => {
    it('records VoucherDeactivated at the command time', () => {
      given([created()])
        .when(deactivate())
        .then([{ type: 'VoucherDeactivated', data: { voucherId: V, deactivatedAt: NOW_ISO } }]);
    });
    it('repeating it decides nothing', () => {
      given([created(), deactivated]).when(deactivate()).thenNothing();
    });
    it('a voucher made inactive by an update still records its deletion', () => {
      given([created(), updated({ status: 'inactive' })])
        .when(deactivate())
        .then([{ type: 'VoucherDeactivated', data: { voucherId: V, deactivatedAt: NOW_ISO } }]);
    });
    it('a voucher re-activated after a deletion can be deleted again', () => {
      given([created(), deactivated, updated({ status: 'active' })])
        .when(deactivate())
        .then([{ type: 'VoucherDeactivated', data: { voucherId: V, deactivatedAt: NOW_ISO } }]);
    });
    it('rejects an unknown voucher', () => {
      given([]).when(deactivate('v_missing')).thenThrows('VOUCHER_NOT_FOUND', { voucher_id: 'v_missing' });
    });
  });

  describe('ApplyVoucher', () => {
    it('records VoucherApplied with the discount, final amount and lines computed by hand', () => {
      given([created()]).when(apply()).then([appliedByHand()]);
    });
    it('an order without items is discounted on its whole value, with no lines', () => {
      // fixed 2_000 on 1_500: capped at the base → discount 1_500, final 0
      given([created({ voucherType: 'fixed', value: 2_000, currency: undefined })])
        .when(apply({ order: { value: 1_500 }, customer: undefined }))
        .then([
          appliedByHand({
            customerId: undefined,
            customerSegment: undefined,
            customerRegion: undefined,
            orderValue: 1_500,
            orderSummary: { itemCount: 0, itemsValue: 0, appliedLineCount: 0, appliedLinesValue: 0 },
            discountAmount: 1_500,
            finalAmount: 0,
            currency: null,
            appliedTo: [],
          }),
        ]);
    });
    it('rejects an inactive voucher', () => {
      given([created(), deactivated]).when(apply()).thenThrows('VOUCHER_INVALID', { reason: 'inactive' });
    });
    it('rejects a voucher whose valid_until has passed by the clock (no expiry event yet)', () => {
      given([withConditions({ valid_until: PAST })])
        .when(apply())
        .thenThrows('VOUCHER_EXPIRED', { expired_at: PAST, current_time: NOW_ISO });
    });
    it('valid_until equal to now is already expired', () => {
      given([withConditions({ valid_until: NOW_ISO })])
        .when(apply())
        .thenThrows('VOUCHER_EXPIRED', { expired_at: NOW_ISO, current_time: NOW_ISO });
    });
    it('rejects a voucher whose expiry was recorded', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(apply())
        .thenThrows('VOUCHER_EXPIRED', { expired_at: PAST, current_time: NOW_ISO });
    });
    it('rejects a voucher before its valid_from', () => {
      given([withConditions({ valid_from: '2026-02-01T00:00:00Z' })])
        .when(apply())
        .thenThrows('VOUCHER_INVALID', {
          reason: 'not_yet_valid',
          valid_from: '2026-02-01T00:00:00Z',
          current_time: NOW_ISO,
        });
    });
    it('rejects an order in another currency', () => {
      given([created()])
        .when(apply({ order: { ...ORDER, currency: 'USD' } }))
        .thenThrows('VOUCHER_INVALID', {
          reason: 'currency_mismatch',
          required_currency: 'EUR',
          current_currency: 'USD',
        });
    });
    it('rejects an order below min_order_value', () => {
      given([withConditions({ min_order_value: 10_000 })])
        .when(apply())
        .thenThrows('VOUCHER_INVALID', {
          reason: 'min_order_value',
          min_required: 10_000,
          current_value: 7_499,
          currency: 'EUR',
        });
    });
    it('an order exactly at min_order_value is accepted', () => {
      given([withConditions({ min_order_value: 7_499 })])
        .when(apply())
        .then([appliedByHand()]);
    });
    it('rejects when max_uses is reached', () => {
      given([withConditions({ max_uses: 2 }), applied('va_1', 'ord_1'), applied('va_2', 'ord_2')])
        .when(apply())
        .thenThrows('USAGE_LIMIT_EXCEEDED', { max_uses: 2, current_uses: 2, limit_type: 'total_uses' });
    });
    it('rejects a voucher with customer_limit when no customer.id is given', () => {
      given([withConditions({ customer_limit: 1 })])
        .when(apply({ customer: { segment: 'vip' } }))
        .thenThrows('VOUCHER_INVALID', { reason: 'customer_required' });
      given([withConditions({ customer_limit: 1 })])
        .when(apply({ customer: undefined }))
        .thenThrows('VOUCHER_INVALID', { reason: 'customer_required' });
    });
    it('rejects a customer who reached customer_limit, and accepts another customer', () => {
      const history = [
        withConditions({ customer_limit: 2 }),
        applied('va_1', 'ord_1', 'cus_1'),
        applied('va_2', 'ord_2', 'cus_1'),
      ];
      given(history)
        .when(apply())
        .thenThrows('USAGE_LIMIT_EXCEEDED', { max_uses: 2, current_uses: 2, limit_type: 'customer_uses' });
      given(history)
        .when(apply({ customer: { ...CUSTOMER, id: 'cus_2' } }))
        .then([appliedByHand({ customerId: 'cus_2' })]);
    });
    it('rejects when product_ids match no item of the order', () => {
      given([withConditions({ product_ids: ['Z'] })])
        .when(apply())
        .thenThrows('VOUCHER_INVALID', { reason: 'no_eligible_items', product_ids: ['Z'], excluded_product_ids: [] });
    });
    it('rejects a restricted voucher on an order without items', () => {
      given([withConditions({ product_ids: ['A'] })])
        .when(apply({ order: { value: 5_000, currency: 'EUR' } }))
        .thenThrows('VOUCHER_INVALID', { reason: 'no_eligible_items' });
    });
    it('product_ids restrict the discount to the matching lines', () => {
      // base = B's line 3_001; 15% = 450.15 → 450; final 7_499 − 450 = 7_049
      given([withConditions({ product_ids: ['B'] })])
        .when(apply())
        .then([
          appliedByHand({
            discountAmount: 450,
            finalAmount: 7_049,
            orderSummary: { itemCount: 2, itemsValue: 6_999, appliedLineCount: 1, appliedLinesValue: 3_001 },
            appliedTo: [{ item_id: 'B', original_price: 3_001, discount_amount: 450, final_price: 2_551 }],
          }),
        ]);
    });
    it('rejects item lines that add up to more than order.value', () => {
      given([created()])
        .when(apply({ order: { ...ORDER, value: 6_998 } }))
        .thenThrows('INVALID_REQUEST', { field: 'order.items' });
    });
    it('a repeat on the same order with the same (or no) order and customer decides nothing', () => {
      const history = [created(), applied('va_1', 'ord_1', 'cus_1')];
      given(history)
        .when(apply({ orderId: 'ord_1', requestOrderFingerprint: 'of-ord_1', requestCustomerFingerprint: 'cf-cus_1' }))
        .thenNothing();
      given(history)
        .when(apply({ orderId: 'ord_1', order: undefined, customer: undefined }))
        .thenNothing();
    });
    it('a repeat with another order fingerprint is VOUCHER_ALREADY_APPLIED', () => {
      given([created(), applied('va_1', 'ord_1', 'cus_1')])
        .when(apply({ orderId: 'ord_1', requestOrderFingerprint: 'of-other', requestCustomerFingerprint: 'cf-cus_1' }))
        .thenThrows('VOUCHER_ALREADY_APPLIED', { order_id: 'ord_1', voucher_id: V });
    });
    it('a repeat with another customer fingerprint is VOUCHER_ALREADY_APPLIED', () => {
      given([created(), applied('va_1', 'ord_1', 'cus_1')])
        .when(apply({ orderId: 'ord_1', requestCustomerFingerprint: 'cf-cus_2' }))
        .thenThrows('VOUCHER_ALREADY_APPLIED', { order_id: 'ord_1', voucher_id: V });
    });
    describe('what the event keeps of a large order', () => {
      /** 1,000 lines with the longest ids and categories the schema allows (128 characters). */
      const long = (prefix: string, i: number) => `${prefix}${String(i).padStart(4, '0')}`.padEnd(128, 'x');
      const items = Array.from({ length: 1_000 }, (_, i) => ({
        id: long('item-', i),
        price: 100,
        quantity: 1,
        category: long('cat-', i),
      }));
      const BIG: Order = { value: 100_000, currency: 'EUR', items };
      const decided = (): VoucherApplied => {
        const events = voucherDecider.decide(apply({ order: BIG }), fold([created()]));
        expect(events).to.have.length(1);
        return events[0] as VoucherApplied;
      };

      it('keeps a bounded summary and the first lines, not the items: a few KB', () => {
        const { data } = decided();
        expect(data).not.to.have.property('orderItems');
        expect(data.orderSummary).to.deep.equal({
          itemCount: 1_000,
          itemsValue: 100_000,
          appliedLineCount: 1_000,
          appliedLinesValue: 100_000,
        });
        expect(data.appliedTo).to.have.length(20);
        expect(data.appliedTo[0]).to.deep.equal({
          item_id: items[0]!.id,
          original_price: 100,
          discount_amount: 15,
          final_price: 85,
        });
        expect(data.orderFingerprint).to.equal('of-ord_new');
        // with every item (and every line) the same event was about 500 KB
        expect(JSON.stringify(data).length).to.be.below(8_000);
      });
    });
    it('rejects an apply without an order', () => {
      given([created()])
        .when(apply({ order: undefined }))
        .thenThrows('INVALID_REQUEST', { field: 'order' });
    });
    it('rejects an unknown voucher', () => {
      given([]).when(apply()).thenThrows('VOUCHER_NOT_FOUND', { voucher_id: V });
    });
    it('the same order may be applied again after its application was rolled back', () => {
      given([created(), applied('va_1', 'ord_new', 'cus_1'), rolledBack('va_1', 'ord_new', 'cus_1')])
        .when(apply({ requestOrderFingerprint: 'of-changed' }))
        .then([appliedByHand()]);
    });
    it('a rollback frees a max_uses slot', () => {
      const history = [withConditions({ max_uses: 1 }), applied('va_1', 'ord_1')];
      given(history).when(apply()).thenThrows('USAGE_LIMIT_EXCEEDED', { current_uses: 1 });
      given([...history, rolledBack('va_1', 'ord_1')])
        .when(apply())
        .then([appliedByHand()]);
    });
    it('a rollback frees a customer slot', () => {
      const history = [withConditions({ customer_limit: 1 }), applied('va_1', 'ord_1', 'cus_1')];
      given(history).when(apply()).thenThrows('USAGE_LIMIT_EXCEEDED', { limit_type: 'customer_uses', current_uses: 1 });
      given([...history, rolledBack('va_1', 'ord_1', 'cus_1')])
        .when(apply())
        .then([appliedByHand()]);
    });
  });

  describe('RollbackApplication', () => {
    it('records the rollback with the application data', () => {
      given([created(), applied('va_1', 'ord_1', 'cus_1')])
        .when(rollback('va_1', 'customer returned the goods'))
        .then([
          {
            type: 'VoucherApplicationRolledBack',
            data: {
              voucherId: V,
              applicationId: 'va_1',
              orderId: 'ord_1',
              customerId: 'cus_1',
              discountAmount: 1_500,
              finalAmount: 8_500,
              orderValue: 10_000,
              currency: 'EUR',
              reason: 'customer returned the goods',
              appliedAt: '2026-01-14T10:00:00Z',
              rolledBackAt: NOW_ISO,
            },
          },
        ]);
    });
    it('repeating it decides nothing', () => {
      given([created(), applied('va_1', 'ord_1', 'cus_1'), rolledBack('va_1', 'ord_1', 'cus_1')])
        .when(rollback('va_1'))
        .thenNothing();
    });
    it('rejects an unknown application', () => {
      given([created(), applied('va_1', 'ord_1')])
        .when(rollback('va_2'))
        .thenThrows('APPLICATION_NOT_FOUND', { application_id: 'va_2' });
      given([]).when(rollback('va_1')).thenThrows('APPLICATION_NOT_FOUND', { application_id: 'va_1' });
    });
  });

  describe('ExpireVoucher', () => {
    it('records VoucherExpired once valid_until has passed', () => {
      given([withConditions({ valid_until: PAST })])
        .when(expire())
        .then([{ type: 'VoucherExpired', data: { voucherId: V, validUntil: PAST, expiredAt: NOW_ISO } }]);
    });
    it('decides nothing before valid_until or without one', () => {
      given([withConditions({ valid_until: FUTURE })])
        .when(expire())
        .thenNothing();
      given([created()]).when(expire()).thenNothing();
    });
    it('decides nothing for an inactive voucher', () => {
      given([withConditions({ valid_until: PAST }), deactivated])
        .when(expire())
        .thenNothing();
    });
    it('decides nothing for a voucher already expired', () => {
      given([withConditions({ valid_until: PAST }), expired])
        .when(expire())
        .thenNothing();
    });
    it('rejects an unknown voucher', () => {
      given([]).when(expire('v_missing')).thenThrows('VOUCHER_NOT_FOUND', { voucher_id: 'v_missing' });
    });
  });

  describe('evolve', () => {
    it('folds applications and rollbacks into usage counts', () => {
      const state = fold([
        withConditions({ customer_limit: 3 }),
        applied('va_1', 'ord_1', 'cus_1'),
        applied('va_2', 'ord_2', 'cus_1'),
        applied('va_3', 'ord_3', 'cus_2'),
        rolledBack('va_2', 'ord_2', 'cus_1'),
        rolledBack('va_2', 'ord_2', 'cus_1'),
      ] as VoucherEvent[])!;
      expect(state.usageCount).to.equal(2);
      expect([...state.customerUses]).to.deep.equal([
        ['cus_1', 1],
        ['cus_2', 1],
      ]);
      expect([...state.liveByOrder]).to.deep.equal([
        ['ord_1', 'va_1'],
        ['ord_3', 'va_3'],
      ]);
      expect(state.applications.get('va_2')!.status).to.equal('rolled_back');
    });
  });

  describe('the given/when/then helper itself', () => {
    it('fails when the events differ, when nothing is thrown, or on another code or details', () => {
      expect(() => given([created()]).when(deactivate()).thenNothing()).to.throw(AssertionError);
      expect(() =>
        given([created()])
          .when(apply())
          .then([appliedByHand({ discountAmount: 1_049 })]),
      ).to.throw(AssertionError);
      expect(() => given([created()]).when(deactivate()).thenThrows('VOUCHER_NOT_FOUND')).to.throw(
        AssertionError,
        /decided/,
      );
      expect(() => given([]).when(deactivate()).thenThrows('VOUCHER_INVALID')).to.throw(AssertionError);
      expect(() => given([]).when(deactivate()).thenThrows('VOUCHER_NOT_FOUND', { voucher_id: 'other' })).to.throw(
        AssertionError,
      );
      expect(() =>
        given([])
          .when(create({ value: 101 }))
          .thenThrows('INVALID_REQUEST', { field: 'code' }),
      ).to.throw(AssertionError);
    });
  });

  describe('VoidReservation (an orphaned order reservation)', () => {
    const voidIt = (applicationId: string, orderId = 'ord_new'): Cmd<'VoidReservation'> => ({
      type: 'VoidReservation',
      data: { voucherId: V, applicationId, orderId },
      metadata,
    });
    const voided = (applicationId: string, orderId = 'ord_new'): VoucherStreamEvent => ({
      type: 'VoucherReservationVoided',
      data: { voucherId: V, applicationId, orderId, voidedAt: NOW_ISO },
    });

    it('voids an application the voucher has not recorded; nothing when it has, or when already voided', () => {
      given([created()])
        .when(voidIt('va_new'))
        .then([voided('va_new')]);
      given([created(), applied('va_new', 'ord_new')])
        .when(voidIt('va_new'))
        .thenNothing();
      given([created(), voided('va_new')])
        .when(voidIt('va_new'))
        .thenNothing();
    });

    it('a late apply of a voided application is refused (retry), and uses nothing', () => {
      given([created(), voided('va_new')])
        .when(apply())
        .thenThrows('CONCURRENT_MODIFICATION');
      const state = fold([created(), voided('va_new')]);
      expect(state!.usageCount).to.equal(0);
      given([created(), voided('va_other')])
        .when(apply())
        .run();
    });
  });
});
