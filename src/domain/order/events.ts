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
 * The order carries the voucher with this discount: written in the same atomic append as the
 * voucher's VoucherApplied.
 */
export interface OrderVoucherConfirmed {
  type: 'OrderVoucherConfirmed';
  data: OrderVoucherProfile & { orderId: string; applicationId: string; discountAmount: number; confirmedAt: string };
}

/**
 * The voucher no longer counts on the order: its application failed (`apply_failed`), was rolled
 * back (`rolled_back`), or a newer application of the same voucher replaced one whose rollback
 * detach was lost (`superseded`).
 */
export interface OrderVoucherDetached {
  type: 'OrderVoucherDetached';
  data: {
    orderId: string;
    voucherId: string;
    applicationId: string;
    reason: 'apply_failed' | 'rolled_back' | 'superseded';
    detachedAt: string;
  };
}

export type OrderEvent = OrderVoucherConfirmed | OrderVoucherDetached;

export const orderStream = (orderId: string): string => `order-${orderId}`;
