import { zeroTotals, type DailyDoc, type Totals } from '../../projections/analyticsDocs.ts';
import { isoSeconds } from '../../domain/clock.ts';
import type { EnvContext } from '../context.ts';
import { countCustomers } from '../../projections/customerGaps.ts';
import { customersInWindow, dailyDocs, environmentCustomers, totalsOf, voucherOrNotFound } from './reads.ts';
import { avgOrderValue, conversionRate, metricsOf, pick, round, type Metric } from './metrics.ts';
import { bucketOf, daysOf, timePeriod, type DayWindow, type Interval } from './window.ts';

const segmentTotals = (daily: Iterable<{ segments: Record<string, Totals> }>): Map<string, Totals> => {
  const out = new Map<string, Totals>();
  for (const doc of daily) {
    for (const [segment, t] of Object.entries(doc.segments))
      out.set(segment, totalsOf([out.get(segment) ?? zeroTotals(), t]));
  }
  return out;
};

/**
 * `GET /analytics/vouchers/{id}/performance`: reads ≤ `days` daily docs, whatever the number of
 * applications or customers (unique customers and repeat usage from their gap histograms).
 */
export const performance = async (ctx: EnvContext, voucherId: string, w: DayWindow, includeDetails: boolean) => {
  const voucher = await voucherOrNotFound(ctx, voucherId);
  const daily = await dailyDocs(ctx, voucherId, w);
  const counted = countCustomers(daily.values(), w.startDay);
  const totals = totalsOf(daily.values());
  const all = metricsOf(totals, counted.unique);
  const body: Record<string, unknown> = {
    voucher_id: voucher.id,
    code: voucher.code,
    performance: {
      total_uses: all.uses,
      total_discount: all.discount,
      conversion_rate: all.conversion_rate,
      avg_order_value: all.avg_order_value,
      revenue_impact: all.revenue_impact,
      unique_customers: all.unique_customers,
      repeat_usage: counted.repeat,
    },
    time_period: timePeriod(w),
    currency: voucher.currency ?? [...daily.values()].find((d) => d.currency !== null)?.currency ?? null,
    generated_at: isoSeconds(ctx.clock.now()),
  };
  if (includeDetails) {
    body.details = {
      daily: daysOf(w).map((day) => {
        const doc = daily.get(day);
        const { unique_customers, ...rest } = metricsOf(doc ?? zeroTotals(), doc?.unique_customers ?? 0);
        return { date: day, ...rest, unique_customers };
      }),
      segments: [...segmentTotals(daily.values())]
        .map(([segment, t]) => ({
          segment,
          ...pick(metricsOf(t, 0), [
            'uses',
            'discount',
            'orders',
            'conversion_rate',
            'avg_order_value',
            'revenue_impact',
          ]),
        }))
        .sort((a, b) => b.uses! - a.uses! || a.segment.localeCompare(b.segment)),
    };
  }
  return body;
};

export const DEFAULT_TREND_METRICS: readonly Metric[] = [
  'uses',
  'discount',
  'orders',
  'conversion_rate',
  'avg_order_value',
];

/**
 * `GET /analytics/vouchers/{id}/trends`: zero-filled buckets of the window; growth compares the
 * window's first ⌊n/2⌋ days with its last ⌊n/2⌋ days (the middle day of an odd window is in neither).
 */
export const trends = async (
  ctx: EnvContext,
  voucherId: string,
  w: DayWindow,
  interval: Interval,
  metrics: readonly Metric[],
) => {
  const voucher = await voucherOrNotFound(ctx, voucherId);
  const daily = await dailyDocs(ctx, voucherId, w);
  const days = daysOf(w);
  const buckets = new Map<string, { totals: Totals; from: string; docs: DailyDoc[] }>();
  for (const day of days) {
    const key = bucketOf(day, interval);
    const bucket = buckets.get(key) ?? buckets.set(key, { totals: zeroTotals(), from: day, docs: [] }).get(key)!; // clipped to the window
    const doc = daily.get(day);
    if (doc) {
      bucket.totals = totalsOf([bucket.totals, doc]);
      bucket.docs.push(doc);
    }
  }
  const usesOn = (list: string[]) => list.reduce((n, day) => n + (daily.get(day)?.uses ?? 0), 0);
  const half = Math.floor(days.length / 2);
  const first = usesOn(days.slice(0, half));
  const second = usesOn(days.slice(days.length - half));
  const totals = totalsOf(daily.values());
  return {
    voucher_id: voucher.id,
    code: voucher.code,
    interval,
    metrics: [...metrics],
    time_period: timePeriod(w),
    trends: [...buckets].map(([date, b]) => ({
      date,
      ...pick(metricsOf(b.totals, countCustomers(b.docs, b.from).unique), metrics),
    })),
    summary: {
      total_period_uses: totals.uses,
      total_period_discount: totals.discount,
      avg_daily_uses: round(totals.uses / w.days, 2),
      growth_rate: first > 0 ? round((second - first) / first, 4) : 0,
    },
    generated_at: isoSeconds(ctx.clock.now()),
  };
};

const ranked = <T extends { count: number }>(rows: Array<T & { key: string }>, limit: number) =>
  rows.sort((a, b) => b.count - a.count || a.key.localeCompare(b.key)).slice(0, limit);

/** `GET /analytics/vouchers/{id}/customers`: customers with live uses of the voucher in the window. */
export const customerInsights = async (ctx: EnvContext, voucherId: string, w: DayWindow, limit: number) => {
  const voucher = await voucherOrNotFound(ctx, voucherId);
  const [daily, customers] = await Promise.all([dailyDocs(ctx, voucherId, w), customersInWindow(ctx, voucherId, w)]);
  const lifetime = await environmentCustomers(
    ctx,
    customers.map((c) => c.doc.customer_id),
  );
  const total = customers.length;
  const isNew = (c: (typeof customers)[number]) => c.doc.customer_first_applied_at.slice(0, 10) >= w.startDay;
  const mean = (sum: number) => (total > 0 ? Math.round(sum / total) : 0);
  const bySegment = segmentTotals(daily.values());
  const group = (keyOf: (c: (typeof customers)[number]) => string) => {
    const out = new Map<string, number>();
    for (const c of customers) out.set(keyOf(c), (out.get(keyOf(c)) ?? 0) + 1);
    return out;
  };
  const segments = ranked(
    [...group((c) => c.doc.segment)].map(([key, count]) => {
      const t = bySegment.get(key) ?? zeroTotals();
      return {
        key,
        segment: key,
        count,
        avg_order_value: avgOrderValue(t),
        conversion_rate: conversionRate(t.uses, t.orders),
      };
    }),
    limit,
  );
  const regions = ranked(
    [...group((c) => c.doc.region)].map(([key, count]) => ({
      key,
      region: key,
      count,
      percentage: round((count / total) * 100, 2),
    })),
    limit,
  );
  return {
    voucher_id: voucher.id,
    code: voucher.code,
    time_period: timePeriod(w),
    customer_insights: {
      total_customers: total,
      new_customers: customers.filter(isNew).length,
      returning_customers: customers.filter((c) => !isNew(c)).length,
      avg_customer_value: mean(customers.reduce((n, c) => n + c.spend, 0)),
      customer_lifetime_value: mean(customers.reduce((n, c) => n + (lifetime.get(c.doc.customer_id)?.spend ?? 0), 0)),
      top_customer_segments: segments.map(({ key: _k, ...row }) => row),
      geographic_distribution: regions.map(({ key: _k, ...row }) => row),
    },
    generated_at: isoSeconds(ctx.clock.now()),
  };
};
