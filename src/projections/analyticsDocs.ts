/**
 * The analytics read models (documents of projections/analytics.ts). Days are UTC calendar days,
 * `YYYY-MM-DD`; amounts are integer cents. Every figure counts live applications: a rollback
 * subtracts the application from the day it was applied on.
 */
import type { GapHistogram } from './customerGaps.ts';

/** Sums kept per day, per voucher and per segment within the day. */
export interface Totals {
  uses: number;
  discount: number;
  /** Sum of pre-discount order values of the applications. */
  order_value: number;
  /**
   * The revenue impact: what customers paid for the orders, each order's paid amount counted
   * once over its vouchers (the applications' shares, see AnalyticsOrderDoc).
   */
  final_amount: number;
  /** Order attempts (validations, one per distinct order id; see OrderAttemptsRecorded). */
  orders: number;
}

/** `analytics_daily/<voucher>|<day>`: one voucher on one UTC day. */
export interface DailyDoc extends Totals {
  id: string;
  voucher_id: string;
  date: string;
  /** Customers with at least one live application of the voucher that day. */
  unique_customers: number;
  currency: string | null;
  /**
   * Totals by `customer.segment` (`unknown` when absent): at most MAX_SEGMENTS named segments,
   * the rest under OTHER_SEGMENT. Keys are the caller's text, so they are read with `segmentKey`
   * and written into a null-prototype copy (a segment named `__proto__` or `constructor` is an
   * ordinary key), never looked up on a plain object.
   */
  segments: Record<string, Totals>;
  /**
   * The day's live uses by customer by their gaps to the customer's two previous uses
   * ("g1.g2" → uses; see customerGaps.ts): unique customers and repeat usage of any window.
   */
  gaps: GapHistogram;
  [key: string]: unknown;
}

import type { DayEntry } from './customerGaps.ts';

export type { DayEntry };

/**
 * `analytics_voucher_customers/<voucher>|<customer>`: one customer of one voucher. `days` holds
 * only days with live uses; it names the days of the customer's next uses, whose gap histograms
 * an application or rollback changes, and the customer insights of a window read the docs whose
 * [first_day, last_day] overlaps it (indexed on voucher_id, last_day) without reading any
 * application. A doc grows by one entry per distinct day the customer used the voucher.
 */
export interface VoucherCustomerDoc {
  id: string;
  voucher_id: string;
  customer_id: string;
  /**
   * Segment and region of the customer's latest application (`unknown` when not given); the
   * segment as the day counted it (`other` past the cap of MAX_SEGMENTS).
   */
  segment: string;
  region: string;
  uses: number;
  /** The shares of its orders' paid amounts counted for this voucher (see AnalyticsOrderDoc). */
  spend: number;
  order_value: number;
  /** First and last application ever recorded (a rollback does not move them). */
  first_used_at: string;
  last_used_at: string;
  /** First and last day with live uses; null when every use was rolled back. */
  first_day: string | null;
  last_day: string | null;
  /** When the customer's first application in the environment happened (any voucher). */
  customer_first_applied_at: string;
  days: Record<string, DayEntry>;
  [key: string]: unknown;
}

/** `analytics_customers/<customer>`: a customer across the environment (any voucher). */
export interface CustomerDoc {
  id: string;
  /** First application ever, rolled back or not: decides new versus returning. */
  first_applied_at: string;
  uses: number;
  /** What the customer paid for their voucher orders, each order once (the sum of its shares). */
  spend: number;
  /** Pre-discount order values, one per live application. */
  order_value: number;
  [key: string]: unknown;
}

/** `analytics_order_attempts/<voucher>|<order id>`: an order id already counted as an attempt. */
export interface OrderAttemptDoc {
  id: string;
  voucher_id: string;
  order_id: string;
  first_seen_at: string;
  [key: string]: unknown;
}

/**
 * `analytics_applications/<application id>`: what a rollback needed to undo an application, in
 * files an earlier build folded. No application writes one now: a rollback reads the application's
 * entry among its order's live applications (AnalyticsOrderDoc), and reads this document only when
 * the order does not list it (decision 097). A replay empties the collection.
 */
export interface AnalyticsApplicationDoc {
  id: string;
  voucher_id: string;
  customer_id: string | null;
  day: string;
  segment: string;
  rolled_back: boolean;
  [key: string]: unknown;
}

/** One live application of an order, with its share of what the customer pays for the order. */
export interface OrderShare {
  application_id: string;
  voucher_id: string;
  customer_id: string | null;
  /** The application's day and segment key: where its money is counted. */
  day: string;
  segment: string;
  discount: number;
  /** Cents of the order's paid amount counted for this application (see AnalyticsOrderDoc). */
  share: number;
}

/**
 * `analytics_orders/<order id>`: an order's live applications. What the customer pays for the
 * order (`order_value` − the discounts of all its live applications) is split into shares, one
 * per application, in proportion to their discounts (largest remainder, ties to the earlier
 * application; equal weights when every discount is 0). Every money figure of the analytics
 * (revenue impact, customer spend and lifetime value) adds up shares, so an order's money is
 * counted once however many vouchers it carries. An application or rollback on the order moves
 * the shares of the others: their documents change with it. Removed when no application is live.
 */
export interface AnalyticsOrderDoc {
  id: string;
  order_value: number;
  /** In the order applied. */
  live: OrderShare[];
  [key: string]: unknown;
}

export const COLLECTIONS = {
  daily: 'analytics_daily',
  voucherCustomers: 'analytics_voucher_customers',
  customers: 'analytics_customers',
  orderAttempts: 'analytics_order_attempts',
  applications: 'analytics_applications',
  orders: 'analytics_orders',
} as const;

export const dailyId = (voucherId: string, day: string): string => `${voucherId}|${day}`;
export const voucherCustomerId = (voucherId: string, customerId: string): string => `${voucherId}|${customerId}`;
export const orderAttemptId = (voucherId: string, orderId: string): string => `${voucherId}|${orderId}`;

/** An ISO timestamp in UTC with a time of day that stays within its date (as the service writes them). */
const UTC_TIMESTAMP = /^(\d{4}-\d{2}-\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?Z$/;
/** The day of each date part seen (bounded: cleared when full). */
const daysOfDates = new Map<string, string>();
const DAYS_OF_DATES_MAX = 10_000;

/**
 * The UTC day of an ISO timestamp. Every event of a replay asks for one: a timestamp in UTC whose
 * time of day stays within its date has the day of its date part at midnight, computed once per
 * date; any other form is parsed whole.
 */
export const dayOf = (iso: string): string => {
  const date = UTC_TIMESTAMP.exec(iso)?.[1];
  if (date === undefined) return new Date(iso).toISOString().slice(0, 10);
  let day = daysOfDates.get(date);
  if (day === undefined) {
    day = new Date(`${date}T00:00:00Z`).toISOString().slice(0, 10);
    if (daysOfDates.size >= DAYS_OF_DATES_MAX) daysOfDates.clear();
    daysOfDates.set(date, day);
  }
  return day;
};

export const UNKNOWN = 'unknown';

/**
 * Distinct segments one daily document holds by name. A segment first seen on a day that
 * already holds this many is counted under OTHER_SEGMENT (so is a segment named `other`): the
 * document stays bounded (about 20 KB) whatever the callers send.
 */
export const MAX_SEGMENTS = 100;
export const OTHER_SEGMENT = 'other';

/** The key `segment` is counted under in the day's segment totals (its own name, or OTHER_SEGMENT past the cap). */
export const segmentKey = (segments: Record<string, Totals>, segment: string): string => {
  if (Object.hasOwn(segments, segment)) return segment;
  let named = 0;
  for (const key in segments) if (Object.hasOwn(segments, key) && key !== OTHER_SEGMENT) named += 1;
  return named < MAX_SEGMENTS ? segment : OTHER_SEGMENT;
};

export const zeroTotals = (): Totals => ({ uses: 0, discount: 0, order_value: 0, final_amount: 0, orders: 0 });

export const emptyDaily = (voucherId: string, day: string): DailyDoc => ({
  id: dailyId(voucherId, day),
  voucher_id: voucherId,
  date: day,
  ...zeroTotals(),
  unique_customers: 0,
  currency: null,
  segments: Object.create(null) as Record<string, Totals>,
  gaps: {},
});
