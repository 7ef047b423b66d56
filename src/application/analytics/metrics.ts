import type { Totals } from '../../projections/analyticsDocs.ts';
import { EXPORT_METRICS, type ExportMetric } from '../../domain/analytics/events.ts';

/**
 * Metric names, as trends, exports and the performance details use them: the list an export
 * request records (domain/analytics/events.ts), which names every metric.
 */
export const METRICS = EXPORT_METRICS;
export type Metric = ExportMetric;

export const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** uses / orders as a fraction, 4 decimals, 0 without orders, at most 1 (see the API reference). */
export const conversionRate = (uses: number, orders: number): number =>
  orders > 0 ? round(Math.min(1, uses / orders), 4) : 0;
/** Mean pre-discount order value of the applications, integer cents. */
export const avgOrderValue = (t: Pick<Totals, 'uses' | 'order_value'>): number =>
  t.uses > 0 ? Math.round(t.order_value / t.uses) : 0;

export const addUp = (a: Totals, b: Totals): Totals => ({
  uses: a.uses + b.uses,
  discount: a.discount + b.discount,
  order_value: a.order_value + b.order_value,
  final_amount: a.final_amount + b.final_amount,
  orders: a.orders + b.orders,
});

/** The metrics of some totals (unique_customers is supplied: it is not additive). */
export const metricsOf = (t: Totals, uniqueCustomers: number): Record<Metric, number> => ({
  uses: t.uses,
  discount: t.discount,
  orders: t.orders,
  conversion_rate: conversionRate(t.uses, t.orders),
  avg_order_value: avgOrderValue(t),
  revenue_impact: t.final_amount,
  unique_customers: uniqueCustomers,
});

export const pick = (all: Record<Metric, number>, metrics: readonly Metric[]): Partial<Record<Metric, number>> =>
  Object.fromEntries(metrics.map((m) => [m, all[m]]));
