import { zeroTotals, type DailyDoc } from '../../projections/analyticsDocs.ts';
import type { ExportView } from '../../projections/exports.ts';
import type { VoucherDoc } from '../../projections/voucherDetails.ts';
import type { ReadStore } from '../../core/readStore.ts';
import { metricsOf, pick } from '../analytics/metrics.ts';
import { dayNumber, daysOf } from '../analytics/window.ts';
import type { ExportRow } from './files.ts';

/**
 * One row per voucher per day (zero-filled): the voucher codes from the core read models, the
 * figures from the analytics group's daily documents.
 */
export const exportRows = async (
  reads: ReadStore,
  analyticsReads: ReadStore,
  view: ExportView,
): Promise<ExportRow[]> => {
  const days = daysOf({
    startDay: view.start_day,
    endDay: view.end_day,
    days: dayNumber(view.end_day) - dayNumber(view.start_day) + 1,
  });
  const vouchers = await reads.getMany<VoucherDoc>('vouchers', view.voucher_ids);
  const rows: ExportRow[] = [];
  for (const voucherId of view.voucher_ids) {
    const docs = await analyticsReads.find<DailyDoc>('analytics_daily', {
      voucher_id: voucherId,
      date: { $gte: view.start_day, $lte: view.end_day },
    });
    const byDay = new Map(docs.map((d) => [d.date, d]));
    const code = vouchers.get(voucherId)?.code ?? '';
    for (const date of days) {
      const doc = byDay.get(date);
      rows.push({
        voucher_id: voucherId,
        code,
        date,
        metrics: pick(metricsOf(doc ?? zeroTotals(), doc?.unique_customers ?? 0), view.metrics),
      });
    }
  }
  return rows;
};
