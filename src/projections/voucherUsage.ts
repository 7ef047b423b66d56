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
  /**
   * The applications ever recorded on the voucher, rolled back ones included: the `total` of its
   * applications list, read instead of counted (a voucher may have millions). Absent from a
   * document an earlier build wrote, until the read models are replayed: the list then counts.
   */
  applications_total?: number;
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
    if (event.type === 'VoucherApplied') {
      // Without a document this is the voucher's first application; a document without the
      // total (an earlier build's) keeps going without one.
      const total =
        usage === null ? 1 : usage.applications_total === undefined ? undefined : usage.applications_total + 1;
      return total === undefined
        ? { id, usage_count: count + 1 }
        : { id, usage_count: count + 1, applications_total: total };
    }
    const usageCount = Math.max(0, count - 1);
    return usage?.applications_total === undefined
      ? { id, usage_count: usageCount }
      : { id, usage_count: usageCount, applications_total: usage.applications_total };
  },
};
