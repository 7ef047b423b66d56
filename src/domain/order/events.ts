import type { StackRules } from '../discount/stacking.ts';
import type { VoucherType } from '../voucher/events.ts';

/**
 * The order stream `order-<orderId>` records which vouchers an order carries, so that stacking is
 * decided on the write side with the order's own expected revision (two processes cannot both
 * attach a voucher that only one may have). Facts only; amounts integer cents.
 */
export type OrderVoucherProfile = {
  voucherId: string;
  code: string;
  voucherType: VoucherType;
  priority: number;
  stackRules?: StackRules;
  /** The order value the voucher was priced on. */
  orderValue: number;
};

/**
 * The voucher is being applied to the order (apply without an atomic two-stream append): written
 * before the voucher decides, it holds the order's place for this application. It is settled by
 * OrderVoucherConfirmed (the voucher recorded the application) or OrderVoucherDetached (the
 * voucher refused it, or it was found orphaned and voided on the voucher stream). A reservation is
 * not an application: nothing public reads it.
 */
export interface OrderVoucherReserved {
  type: 'OrderVoucherReserved';
  data: OrderVoucherProfile & { orderId: string; applicationId: string; reservedAt: string };
}

/**
 * The order carries the voucher with this discount: written in the same atomic append as the
 * voucher's VoucherApplied, or after it when it settles the application's reservation.
 */
export interface OrderVoucherConfirmed {
  type: 'OrderVoucherConfirmed';
  data: OrderVoucherProfile & { orderId: string; applicationId: string; discountAmount: number; confirmedAt: string };
}

/**
 * The voucher no longer counts on the order: its application failed (`apply_failed`), was rolled
 * back (`rolled_back`), its reservation was found orphaned and voided on the voucher stream
 * (`abandoned`), or a newer application of the same voucher replaced one whose rollback detach was
 * lost (`superseded`).
 */
export interface OrderVoucherDetached {
  type: 'OrderVoucherDetached';
  data: {
    orderId: string;
    voucherId: string;
    applicationId: string;
    reason: 'apply_failed' | 'rolled_back' | 'abandoned' | 'superseded';
    detachedAt: string;
  };
}

export type OrderEvent = OrderVoucherReserved | OrderVoucherConfirmed | OrderVoucherDetached;

export const orderStream = (orderId: string): string => `order-${orderId}`;
