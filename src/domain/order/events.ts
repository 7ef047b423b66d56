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
 * A voucher's application to the order has started (pending until confirmed or detached). Written
 * by older versions only: an application is now recorded confirmed, in the VoucherApplied's append.
 */
export interface OrderVoucherAttached {
  type: 'OrderVoucherAttached';
  data: OrderVoucherProfile & { orderId: string; applicationId: string; attachedAt: string };
}

/** The voucher's VoucherApplied is recorded: the order carries it with this discount. */
export interface OrderVoucherConfirmed {
  type: 'OrderVoucherConfirmed';
  data: OrderVoucherProfile & { orderId: string; applicationId: string; discountAmount: number; confirmedAt: string };
}

/**
 * The voucher no longer counts on the order: its application failed (`apply_failed`), was
 * rolled back (`rolled_back`), never completed (`abandoned`), or a newer attachment of the same
 * voucher replaced a stale one (`superseded`).
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

export type OrderEvent = OrderVoucherAttached | OrderVoucherConfirmed | OrderVoucherDetached;

export const orderStream = (orderId: string): string => `order-${orderId}`;
