import type { Projection } from '../core/projection.ts';
import type { VoucherApplicationRolledBack, VoucherApplied } from '../domain/voucher/events.ts';

/**
 * A voucher's usage count, in a collection of its own. It is the only part of a voucher that
 * every apply changes, and the `vouchers` documents carry five indexes (list filters and sorts):
 * kept there, each apply rewrote every index entry of its voucher (SQLite updates each expression
 * index of a changed row), about 15–30 µs per apply. Here it is a small unindexed document.
 * Readers add it to the voucher (queries.ts); a voucher without one has been used 0 times.
 */
export interface VoucherUsage {
  id: string;
  usage_count: number;
  [key: string]: unknown;
}

export const voucherUsage: Projection<VoucherApplied | VoucherApplicationRolledBack, VoucherUsage> = {
  name: 'voucher_usage',
  collection: 'voucher_usage',
  handles: ['VoucherApplied', 'VoucherApplicationRolledBack'],
  documentId: (event) => event.data.voucherId,
  evolve: (usage, event) => {
    const id = event.data.voucherId;
    const count = usage?.usage_count ?? 0;
    return { id, usage_count: event.type === 'VoucherApplied' ? count + 1 : Math.max(0, count - 1) };
  },
};
