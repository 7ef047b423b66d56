import {
  COLLECTIONS as C,
  zeroTotals,
  type CustomerDoc,
  type DailyDoc,
  type Totals,
  type VoucherCustomerDoc,
} from '../../projections/analyticsDocs.ts';
import type { VoucherDoc } from '../../projections/voucherDetails.ts';
import { DomainError } from '../../domain/errors.ts';
import type { EnvContext } from '../context.ts';
import type { DayWindow } from './window.ts';
import { addUp } from './metrics.ts';

/** The voucher, or VOUCHER_NOT_FOUND with the analytics details `{not_found, found}`. */
export const voucherOrNotFound = async (ctx: EnvContext, voucherId: string): Promise<VoucherDoc> => {
  const view = /^v_[A-Za-z0-9]{1,64}$/.test(voucherId) ? await ctx.reads.get<VoucherDoc>('vouchers', voucherId) : null;
  if (!view)
    throw new DomainError('VOUCHER_NOT_FOUND', `Voucher ${voucherId} was not found`, {
      not_found: [voucherId],
      found: [],
    });
  return view;
};

/** The voucher's daily documents in the window (an indexed range on voucher_id, date): at most `days` documents. */
export const dailyDocs = async (ctx: EnvContext, voucherId: string, w: DayWindow): Promise<Map<string, DailyDoc>> => {
  const docs = await ctx.analyticsReads.find<DailyDoc>(
    C.daily,
    { voucher_id: voucherId, date: { $gte: w.startDay, $lte: w.endDay } },
    { sort: [['date', 1]] },
  );
  return new Map(docs.map((d) => [d.date, d]));
};

export const totalsOf = (docs: Iterable<Totals>): Totals => [...docs].reduce(addUp, zeroTotals());

/** One customer's uses, spend and order value within the window. */
export interface CustomerInWindow {
  doc: VoucherCustomerDoc;
  uses: number;
  spend: number;
  orderValue: number;
  days: string[];
}

/**
 * Customers of the voucher with live uses in the window: the docs whose [first_day, last_day]
 * overlaps it (indexed on voucher_id, last_day), summed over the window's days.
 */
export const customersInWindow = async (
  ctx: EnvContext,
  voucherId: string,
  w: DayWindow,
): Promise<CustomerInWindow[]> => {
  const docs = await ctx.analyticsReads.find<VoucherCustomerDoc>(C.voucherCustomers, {
    voucher_id: voucherId,
    last_day: { $gte: w.startDay },
    first_day: { $lte: w.endDay },
  });
  const out: CustomerInWindow[] = [];
  for (const doc of docs) {
    const entry: CustomerInWindow = { doc, uses: 0, spend: 0, orderValue: 0, days: [] };
    for (const [day, [uses, spend, orderValue]] of Object.entries(doc.days)) {
      if (day < w.startDay || day > w.endDay || uses <= 0) continue;
      entry.uses += uses;
      entry.spend += spend;
      entry.orderValue += orderValue;
      entry.days.push(day);
    }
    if (entry.uses > 0) out.push(entry);
  }
  return out;
};

export const environmentCustomers = (ctx: EnvContext, ids: string[]): Promise<Map<string, CustomerDoc>> =>
  ctx.analyticsReads.getMany<CustomerDoc>(C.customers, ids);
