/**
 * The order decider (stream `order-<orderId>`): record / detach, stacking conflicts, a voucher
 * applied again after its rollback's detach was lost.
 */
import { expect } from 'chai';
import { orderDecider, type OrderCommand } from '../../src/domain/order/decide.ts';
import type { OrderEvent } from '../../src/domain/order/events.ts';
import { liveVouchers, reservationsOf } from '../../src/domain/order/state.ts';
import type { StackProfile } from '../../src/domain/discount/stacking.ts';
import { orderVoucherConfirmed, orderVoucherDetached } from '../fixtures/events.ts';
import { deciderSpecification } from '../support/deciderSpecification.ts';

const NOW = new Date('2026-01-15T12:00:00Z');
const AT = '2026-01-15T12:00:00Z';
const O = 'o-1';

const { given, fold } = deciderSpecification(orderDecider);

const basic = (code: string, type: StackProfile['type'] = 'percentage'): StackProfile => ({
  voucherId: `v_${code}`,
  code,
  type,
  priority: 0,
});
const stackable = (code: string, priority: number, stackRules: StackProfile['stackRules'] = {}): StackProfile => ({
  voucherId: `v_${code}`,
  code,
  type: 'stackable',
  priority,
  stackRules,
});
const profile = (v: StackProfile, orderValue = 10_000) => ({
  voucherId: v.voucherId,
  code: v.code,
  voucherType: v.type,
  priority: v.priority,
  ...(v.stackRules ? { stackRules: v.stackRules } : {}),
  orderValue,
});

const record = (
  v: StackProfile,
  applicationId: string,
  discountAmount = 1000,
  now = NOW,
  orderValue = 10_000,
): OrderCommand => ({
  type: 'RecordApplication',
  data: { orderId: O, applicationId, voucher: v, orderValue, discountAmount },
  metadata: { now },
});
const confirmed = (v: StackProfile, applicationId: string, discountAmount: number, confirmedAt = AT): OrderEvent =>
  orderVoucherConfirmed({ ...profile(v), orderId: O, applicationId, discountAmount, confirmedAt });

describe('order decider', () => {
  const A = basic('A10');
  const B = basic('B20', 'fixed');
  const S1 = stackable('S1', 1);
  const S2 = stackable('S2', 2, { max_stack_count: 2 });

  it('records the first voucher of an order as confirmed, with its discount (written with its VoucherApplied)', () => {
    given([])
      .when(record(A, 'va_1'))
      .then([confirmed(A, 'va_1', 1000)]);
    expect(liveVouchers(fold([confirmed(A, 'va_1', 1000)]))).to.deep.equal([
      {
        voucherId: 'v_A10',
        code: 'A10',
        type: 'percentage',
        priority: 0,
        orderValue: 10_000,
        applicationId: 'va_1',
        discountAmount: 1000,
        attachedAt: AT,
      },
    ]);
  });

  it('a second non-stackable voucher: STACKING_CONFLICT', () => {
    given([confirmed(A, 'va_1', 1000)])
      .when(record(B, 'va_2'))
      .thenThrows('STACKING_CONFLICT', { conflicting_voucher: 'A10', conflict_reason: 'not_stackable' });
  });

  it('a stackable voucher joins a confirmed one', () => {
    given([confirmed(A, 'va_1', 1000)])
      .when(record(S1, 'va_2', 900))
      .then([confirmed(S1, 'va_2', 900)]);
  });

  it('priority order and max_stack_count are enforced both ways', () => {
    given([confirmed(S2, 'va_1', 100)])
      .when(record(S1, 'va_2'))
      .thenThrows('STACKING_CONFLICT', { conflicting_voucher: 'S2', conflict_reason: 'priority_order' });
    const S3 = stackable('S3', 3);
    given([confirmed(S1, 'va_1', 100), confirmed(S2, 'va_2', 100)])
      .when(record(S3, 'va_3'))
      .thenThrows('STACKING_CONFLICT', { conflicting_voucher: 'S2', conflict_reason: 'max_stack_count' });
  });

  it("the same voucher still on the order (its rollback's detach was lost): superseded", () => {
    const superseded = (applicationId: string): OrderEvent =>
      orderVoucherDetached({ orderId: O, voucherId: 'v_A10', applicationId, reason: 'superseded', detachedAt: AT });
    given([confirmed(A, 'va_1', 1000)])
      .when(record(A, 'va_2'))
      .then([superseded('va_1'), confirmed(A, 'va_2', 1000)]);
    expect(
      fold([confirmed(A, 'va_1', 1000), superseded('va_1'), confirmed(A, 'va_2', 1000)])!.vouchers.map(
        (v) => v.applicationId,
      ),
    ).to.deep.equal(['va_2']);
  });

  it('detach removes only the named application', () => {
    const detach = (applicationId: string): OrderCommand => ({
      type: 'DetachVoucher',
      data: { orderId: O, voucherId: 'v_A10', applicationId, reason: 'apply_failed' },
      metadata: { now: NOW },
    });
    given([confirmed(A, 'va_1', 1000)])
      .when(detach('va_1'))
      .then([
        {
          type: 'OrderVoucherDetached',
          data: { orderId: O, voucherId: 'v_A10', applicationId: 'va_1', reason: 'apply_failed', detachedAt: AT },
        },
      ]);
    given([confirmed(A, 'va_1', 1000)])
      .when(detach('va_9'))
      .then([]);
    given([]).when(detach('va_1')).then([]);
    const state = fold([
      confirmed(A, 'va_1', 1000),
      orderVoucherDetached({
        orderId: O,
        voucherId: 'v_A10',
        applicationId: 'va_1',
        reason: 'apply_failed',
        detachedAt: AT,
      }),
    ]);
    expect(state!.vouchers).to.deep.equal([]);
  });

  describe('reservations (apply without an atomic two-stream append)', () => {
    const reserve = (v: StackProfile, applicationId: string): OrderCommand => ({
      type: 'ReserveApplication',
      data: { orderId: O, applicationId, voucher: v, orderValue: 10_000 },
      metadata: { now: NOW },
    });
    const confirm = (applicationId: string, discountAmount: number): OrderCommand => ({
      type: 'ConfirmApplication',
      data: { orderId: O, applicationId, discountAmount },
      metadata: { now: NOW },
    });
    const reserved = (v: StackProfile, applicationId: string): OrderEvent => ({
      type: 'OrderVoucherReserved',
      data: { ...profile(v), orderId: O, applicationId, reservedAt: AT },
    });
    const detached = (v: StackProfile, applicationId: string, reason: 'abandoned' | 'apply_failed' | 'superseded') =>
      orderVoucherDetached({ orderId: O, voucherId: v.voucherId, applicationId, reason, detachedAt: AT });

    it('reserves the order for a voucher, which is not on the order until confirmed with its discount', () => {
      given([])
        .when(reserve(A, 'va_1'))
        .then([reserved(A, 'va_1')]);
      expect(liveVouchers(fold([reserved(A, 'va_1')]))).to.deep.equal([]);
      expect(reservationsOf(fold([reserved(A, 'va_1')]))).to.have.length(1);
      given([reserved(A, 'va_1')])
        .when(confirm('va_1', 1000))
        .then([confirmed(A, 'va_1', 1000)]);
      const state = fold([reserved(A, 'va_1'), confirmed(A, 'va_1', 1000)]);
      expect(reservationsOf(state)).to.deep.equal([]);
      expect(liveVouchers(state).map((v) => [v.applicationId, v.discountAmount])).to.deep.equal([['va_1', 1000]]);
    });

    it('the stacking rules hold at the reservation; a second reservation waits for the first to settle', () => {
      given([confirmed(A, 'va_1', 1000)])
        .when(reserve(B, 'va_2'))
        .thenThrows('STACKING_CONFLICT', { conflicting_voucher: 'A10', conflict_reason: 'not_stackable' });
      given([reserved(S1, 'va_1')])
        .when(reserve(S2, 'va_2'))
        .thenThrows('CONCURRENT_MODIFICATION');
    });

    it('confirm is idempotent, and nothing once the reservation was released or detached', () => {
      given([reserved(A, 'va_1'), confirmed(A, 'va_1', 1000)])
        .when(confirm('va_1', 1000))
        .thenNothing();
      given([reserved(A, 'va_1'), detached(A, 'va_1', 'abandoned')])
        .when(confirm('va_1', 1000))
        .thenNothing();
    });

    it('detach releases a reservation (a refusal, or an orphan voided on the voucher)', () => {
      given([reserved(A, 'va_1')])
        .when({
          type: 'DetachVoucher',
          data: { orderId: O, voucherId: A.voucherId, applicationId: 'va_1', reason: 'abandoned' },
          metadata: { now: NOW },
        })
        .then([detached(A, 'va_1', 'abandoned')]);
      expect(reservationsOf(fold([reserved(A, 'va_1'), detached(A, 'va_1', 'abandoned')]))).to.deep.equal([]);
    });

    it("confirming a voucher already on the order (its rollback's detach lost) supersedes the old entry", () => {
      given([confirmed(A, 'va_1', 1000), reserved(A, 'va_2')])
        .when(confirm('va_2', 900))
        .then([detached(A, 'va_1', 'superseded'), confirmed(A, 'va_2', 900)]);
    });
  });
});
