import type { VoucherEvent } from '../domain/voucher/events.ts';
import type { Projection } from '../core/projection.ts';

/** One voucher application, for `usage_history` and `GET /vouchers/{id}/applications`. */
export interface ApplicationView {
  id: string;
  voucher_id: string;
  code: string;
  order_id: string;
  customer_id: string | null;
  order_value: number;
  discount_amount: number;
  final_amount: number;
  currency: string | null;
  status: 'applied' | 'rolled_back';
  applied_at: string;
  /** Global position of the application: a total order for "newest first". */
  applied_seq: number;
  rolled_back_at: string | null;
  rollback_reason: string | null;
  [key: string]: unknown;
}

export const usageHistory: Projection<VoucherEvent, ApplicationView> = {
  name: 'usage_history',
  collection: 'applications',
  handles: ['VoucherApplied', 'VoucherApplicationRolledBack'],
  documentId: (event) =>
    event.type === 'VoucherApplied' || event.type === 'VoucherApplicationRolledBack'
      ? event.data.applicationId
      : undefined,
  evolve: (view, event) => {
    if (event.type === 'VoucherApplied') {
      const d = event.data;
      return {
        id: d.applicationId,
        voucher_id: d.voucherId,
        code: d.code,
        order_id: d.orderId,
        customer_id: d.customerId ?? null,
        order_value: d.orderValue,
        discount_amount: d.discountAmount,
        final_amount: d.finalAmount,
        currency: d.currency,
        status: 'applied',
        applied_at: d.appliedAt,
        applied_seq: event.position,
        rolled_back_at: null,
        rollback_reason: null,
      };
    }
    if (event.type === 'VoucherApplicationRolledBack' && view) {
      return {
        ...view,
        status: 'rolled_back',
        rolled_back_at: event.data.rolledBackAt,
        rollback_reason: event.data.reason ?? null,
      };
    }
    return view;
  },
  indexes: [['voucher_id', 'applied_seq']],
};
