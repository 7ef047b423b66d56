import type { OrderAttemptsRecorded } from '../domain/analytics/events.ts';
import type { VoucherApplicationRolledBack, VoucherApplied } from '../domain/voucher/events.ts';
import { docKey, type DocRef, type DocSet, type DocumentSetProjection, type OwnedSet } from '../core/projection.ts';
import type { Document } from '../core/readStore.ts';
import { allocate } from '../domain/discount/allocation.ts';
import { applyGapChanges, followingDays, gapChanges, neighbours, type GapChanges } from './customerGaps.ts';
import {
  COLLECTIONS as C,
  dailyId,
  dayOf,
  emptyDaily,
  orderAttemptId,
  segmentKey,
  UNKNOWN,
  voucherCustomerId,
  zeroTotals,
  type AnalyticsApplicationDoc,
  type AnalyticsOrderDoc,
  type CustomerDoc,
  type DailyDoc,
  type DayEntry,
  type OrderAttemptDoc,
  type OrderShare,
  type Totals,
  type VoucherCustomerDoc,
} from './analyticsDocs.ts';

type Handled = VoucherApplied | VoucherApplicationRolledBack | OrderAttemptsRecorded;

/**
 * A working copy of the touched documents; `changes` collects what evolve returns. `owned` holds
 * the documents evolve may change in place (see DocumentSetProjection.evolve).
 */
class Docs {
  readonly changes: DocSet = new Map();
  constructor(
    private readonly docs: ReadonlyMap<string, Document | null>,
    private readonly owned?: OwnedSet,
  ) {}
  get<T>(collection: string, id: string): T | null {
    const key = docKey(collection, id);
    const changed = this.changes.get(key);
    return ((changed !== undefined ? changed : this.docs.get(key)) as T | null) ?? null;
  }
  set(collection: string, doc: Document): void {
    this.changes.set(docKey(collection, doc.id), doc);
  }
  delete(collection: string, id: string): void {
    this.changes.set(docKey(collection, id), null);
  }
  /**
   * The day's document to change in place, put among the changes: the one this event already
   * changes, else one evolve returned earlier in the batch (`owned`), else a copy of the touched
   * one, else a new one (null instead when `create` is false). Every day evolve returns is built
   * here, so each is a copy of its own down to its segment totals.
   */
  daily(voucherId: string, day: string, create = true): DailyDoc | null {
    const key = docKey(C.daily, dailyId(voucherId, day));
    const changed = this.changes.get(key) as DailyDoc | null | undefined;
    if (changed) return changed;
    const current = this.docs.get(key) as DailyDoc | null | undefined;
    let draft: DailyDoc;
    if (current) draft = this.owned?.has(current) ? current : copyDaily(current);
    else if (create) draft = emptyDaily(voucherId, day);
    else return null;
    this.changes.set(key, draft);
    return draft;
  }
}

/** A day's document with copies of its segment totals (its gap histogram is replaced, never changed). */
const copyDaily = (daily: DailyDoc): DailyDoc => {
  const segments = Object.create(null) as Record<string, Totals>;
  for (const key in daily.segments) if (Object.hasOwn(daily.segments, key)) segments[key] = { ...daily.segments[key]! };
  return { ...daily, segments };
};

/** Adds an application's money to `t` (sign 1) or takes it off (sign -1), in place. */
const addTotals = (
  t: Totals,
  sign: 1 | -1,
  d: { discountAmount: number; orderValue: number; finalAmount: number },
): void => {
  t.uses += sign;
  t.discount += sign * d.discountAmount;
  t.order_value += sign * d.orderValue;
  t.final_amount += sign * d.finalAmount;
};

/**
 * The totals of a segment of a day from Docs.daily, to change in place: `key` names them as
 * counted (its own name, or OTHER_SEGMENT past the cap, see analyticsDocs.ts).
 */
const segmentOf = (daily: DailyDoc, key: string): Totals =>
  Object.hasOwn(daily.segments, key) ? daily.segments[key]! : (daily.segments[key] = zeroTotals());

const countAttempt = (daily: DailyDoc, segment: string): void => {
  daily.orders += 1;
  segmentOf(daily, segmentKey(daily.segments, segment)).orders += 1;
};

const dayRange = (days: Record<string, DayEntry>): { first_day: string | null; last_day: string | null } => {
  const keys = Object.keys(days).sort();
  return { first_day: keys[0] ?? null, last_day: keys.at(-1) ?? null };
};

const minIso = (a: string | undefined, b: string): string => (a !== undefined && a < b ? a : b);
const maxIso = (a: string | undefined, b: string): string => (a !== undefined && a > b ? a : b);

/** A validation's order id counts as one attempt, however often it is validated. */
const countOrderOnce = (
  docs: Docs,
  daily: DailyDoc,
  voucherId: string,
  orderId: string,
  segment: string,
  at: string,
): void => {
  if (docs.get(C.orderAttempts, orderAttemptId(voucherId, orderId))) return;
  docs.set(C.orderAttempts, {
    id: orderAttemptId(voucherId, orderId),
    voucher_id: voucherId,
    order_id: orderId,
    first_seen_at: at,
  } satisfies OrderAttemptDoc);
  countAttempt(daily, segment);
};

/**
 * Applies gap histogram changes: those of the event's own day to `daily`, the others (the
 * customer's next uses, named by `follows`) to their daily documents.
 */
const addGaps = (docs: Docs, daily: DailyDoc, changes: GapChanges): void => {
  for (const [day, delta] of changes) {
    const target = day === daily.date ? daily : docs.daily(daily.voucher_id, day)!;
    target.gaps = applyGapChanges(target.gaps ?? {}, delta);
  }
};

/**
 * The order's live applications with their shares of what the customer pays for it (order value
 * less all their discounts), in proportion to their discounts (see AnalyticsOrderDoc).
 */
const withShares = (orderValue: number, live: OrderShare[]): OrderShare[] => {
  if (live.length === 0) return live;
  const paid = Math.max(0, orderValue - live.reduce((sum, a) => sum + a.discount, 0));
  const weights = live.some((a) => a.discount > 0) ? live.map((a) => a.discount) : live.map(() => 1);
  const shares = allocate(paid, weights);
  return live.map((a, i) => ({ ...a, share: shares[i]! }));
};

/** Moves `delta` cents of paid money onto (or off) an application's figures: its day, its customer. */
const moveMoney = (docs: Docs, a: OrderShare, delta: number): void => {
  if (delta === 0) return;
  const daily = docs.daily(a.voucher_id, a.day, false);
  if (daily) {
    daily.final_amount += delta;
    segmentOf(daily, a.segment).final_amount += delta;
  }
  if (a.customer_id === null) return;
  const vc = docs.get<VoucherCustomerDoc>(C.voucherCustomers, voucherCustomerId(a.voucher_id, a.customer_id));
  if (vc) {
    const entry = vc.days[a.day];
    const days = entry ? { ...vc.days, [a.day]: [entry[0], entry[1] + delta, entry[2]] as DayEntry } : vc.days;
    docs.set(C.voucherCustomers, { ...vc, spend: vc.spend + delta, days });
  }
  const customer = docs.get<CustomerDoc>(C.customers, a.customer_id);
  if (customer) docs.set(C.customers, { ...customer, spend: customer.spend + delta });
};

/** The other applications of an order follow the change of their shares. */
const reattribute = (docs: Docs, before: readonly OrderShare[], after: readonly OrderShare[]): void => {
  const previous = new Map(before.map((a) => [a.application_id, a.share]));
  for (const a of after) {
    const old = previous.get(a.application_id);
    if (old !== undefined) moveMoney(docs, a, a.share - old);
  }
};

const applied = (docs: Docs, d: VoucherApplied['data']): void => {
  const day = dayOf(d.appliedAt);
  const region = d.customerRegion ?? UNKNOWN;
  // decisions.md: `orders` are validation attempts only; an application is a use, not an attempt
  // (conversion_rate is capped at 1 for orders applied without a validation).
  const daily = docs.daily(d.voucherId, day)!;
  // the key the application is counted under, kept for its rollback and the customer insights
  const segment = segmentKey(daily.segments, d.customerSegment ?? UNKNOWN);
  // the order's paid amount is shared with the vouchers already on it (AnalyticsOrderDoc)
  const order = docs.get<AnalyticsOrderDoc>(C.orders, d.orderId);
  const others = order?.live.filter((a) => a.application_id !== d.applicationId) ?? [];
  const orderValue = others.length > 0 ? order!.order_value : d.orderValue;
  const live = withShares(orderValue, [
    ...others,
    {
      application_id: d.applicationId,
      voucher_id: d.voucherId,
      customer_id: d.customerId ?? null,
      day,
      segment,
      discount: d.discountAmount,
      share: 0,
    },
  ]);
  const money = { discountAmount: d.discountAmount, orderValue: d.orderValue, finalAmount: live.at(-1)!.share };
  addTotals(daily, 1, money);
  daily.currency = d.currency ?? daily.currency;
  addTotals(segmentOf(daily, segment), 1, money);
  if (d.customerId !== undefined) {
    const customer = docs.get<CustomerDoc>(C.customers, d.customerId);
    const firstEver = minIso(customer?.first_applied_at, d.appliedAt);
    docs.set(C.customers, {
      id: d.customerId,
      first_applied_at: firstEver,
      uses: (customer?.uses ?? 0) + 1,
      spend: (customer?.spend ?? 0) + money.finalAmount,
      order_value: (customer?.order_value ?? 0) + d.orderValue,
    } satisfies CustomerDoc);
    const vc = docs.get<VoucherCustomerDoc>(C.voucherCustomers, voucherCustomerId(d.voucherId, d.customerId));
    const entry = vc?.days[day] ?? [0, 0, 0];
    if (entry[0] === 0) daily.unique_customers += 1;
    addGaps(docs, daily, gapChanges(day, neighbours(vc?.days ?? {}, day), 1));
    const days = {
      ...vc?.days,
      [day]: [entry[0] + 1, entry[1] + money.finalAmount, entry[2] + d.orderValue] as DayEntry,
    };
    docs.set(C.voucherCustomers, {
      id: voucherCustomerId(d.voucherId, d.customerId),
      voucher_id: d.voucherId,
      customer_id: d.customerId,
      segment,
      region,
      uses: (vc?.uses ?? 0) + 1,
      spend: (vc?.spend ?? 0) + money.finalAmount,
      order_value: (vc?.order_value ?? 0) + d.orderValue,
      first_used_at: minIso(vc?.first_used_at, d.appliedAt),
      last_used_at: maxIso(vc?.last_used_at, d.appliedAt),
      customer_first_applied_at: minIso(vc?.customer_first_applied_at, firstEver),
      days,
      ...dayRange(days),
    } satisfies VoucherCustomerDoc);
  }
  docs.set(C.orders, { id: d.orderId, order_value: orderValue, live } satisfies AnalyticsOrderDoc);
  reattribute(docs, others, live);
};

const rolledBack = (docs: Docs, rollback: VoucherApplicationRolledBack['data']): void => {
  // The application's day, segment and customer come from its entry among the order's live
  // applications. Not listed there, it is rolled back already, or an earlier build folded it into
  // a document of its own (AnalyticsApplicationDoc), which is marked rolled back here.
  const order = docs.get<AnalyticsOrderDoc>(C.orders, rollback.orderId);
  const mine = order?.live.find((a) => a.application_id === rollback.applicationId);
  const kept = docs.get<AnalyticsApplicationDoc>(C.applications, rollback.applicationId);
  const keptLive = kept && !kept.rolled_back ? kept : undefined;
  if (keptLive) docs.set(C.applications, { ...keptLive, rolled_back: true });
  const application = mine ?? keptLive;
  if (!application) return;
  const { day, segment } = application;
  // The application's share leaves its figures and the order's other applications share the
  // paid amount again. One the order does not list (folded before orders were kept) takes off
  // its recorded final amount.
  const d = { ...rollback, finalAmount: mine ? mine.share : rollback.finalAmount };
  const daily = docs.daily(d.voucherId, day)!;
  addTotals(daily, -1, d);
  addTotals(segmentOf(daily, segment), -1, d);
  const customerId = application.customer_id;
  if (customerId !== null) {
    const customer = docs.get<CustomerDoc>(C.customers, customerId);
    if (customer) {
      docs.set(C.customers, {
        ...customer,
        uses: customer.uses - 1,
        spend: customer.spend - d.finalAmount,
        order_value: customer.order_value - d.orderValue,
      });
    }
    const vc = docs.get<VoucherCustomerDoc>(C.voucherCustomers, voucherCustomerId(d.voucherId, customerId));
    if (vc) {
      const [uses, spend, orderValue] = vc.days[day] ?? [0, 0, 0];
      if (uses >= 1) addGaps(docs, daily, gapChanges(day, neighbours(vc.days, day, 1), -1));
      const days = { ...vc.days };
      if (uses <= 1) {
        delete days[day];
        if (uses === 1) daily.unique_customers -= 1;
      } else days[day] = [uses - 1, spend - d.finalAmount, orderValue - d.orderValue];
      docs.set(C.voucherCustomers, {
        ...vc,
        uses: vc.uses - 1,
        spend: vc.spend - d.finalAmount,
        order_value: vc.order_value - d.orderValue,
        days,
        ...dayRange(days),
      });
    }
  }
  if (order && mine) {
    const rest = order.live.filter((a) => a !== mine);
    const live = withShares(order.order_value, rest);
    if (live.length === 0) docs.delete(C.orders, order.id);
    else docs.set(C.orders, { ...order, live });
    reattribute(docs, rest, live);
  }
};

const attempts = (docs: Docs, d: OrderAttemptsRecorded['data']): void => {
  for (const a of d.attempts) {
    const daily = docs.daily(a.voucherId, dayOf(a.at))!;
    const segment = a.segment ?? UNKNOWN;
    if (a.orderId === undefined) countAttempt(daily, segment);
    else countOrderOnce(docs, daily, a.voucherId, a.orderId, segment, a.at);
  }
};

/**
 * Analytics, one projection over six collections (see analyticsDocs.ts): per voucher per day,
 * per voucher per customer, per customer in the environment, seen (voucher, order id) pairs, the
 * application facts a rollback undoes and the live applications of each order (the shares of its
 * paid amount). Runs in its own group (checkpoint `analytics`).
 */
export const analytics: DocumentSetProjection<Handled> = {
  name: 'analytics',
  collections: {
    [C.daily]: [['voucher_id', 'date']],
    [C.voucherCustomers]: [['voucher_id', 'last_day']],
    [C.customers]: [],
    [C.orderAttempts]: [],
    [C.applications]: [],
    [C.orders]: [],
  },
  handles: ['VoucherApplied', 'VoucherApplicationRolledBack', 'OrderAttemptsRecorded'],
  touches: (event) => {
    const refs: DocRef[] = [];
    const customer = (voucherId: string, customerId: string | undefined) => {
      if (customerId === undefined) return;
      refs.push(
        { collection: C.voucherCustomers, id: voucherCustomerId(voucherId, customerId) },
        { collection: C.customers, id: customerId },
      );
    };
    switch (event.type) {
      case 'VoucherApplied': {
        const d = event.data;
        refs.push(
          { collection: C.daily, id: dailyId(d.voucherId, dayOf(d.appliedAt)) },
          { collection: C.orders, id: d.orderId },
        );
        customer(d.voucherId, d.customerId);
        break;
      }
      case 'VoucherApplicationRolledBack': {
        const d = event.data;
        refs.push(
          { collection: C.daily, id: dailyId(d.voucherId, dayOf(d.appliedAt)) },
          { collection: C.applications, id: d.applicationId },
          { collection: C.orders, id: d.orderId },
        );
        customer(d.voucherId, d.customerId);
        break;
      }
      case 'OrderAttemptsRecorded':
        for (const a of event.data.attempts) {
          refs.push({ collection: C.daily, id: dailyId(a.voucherId, dayOf(a.at)) });
          if (a.orderId !== undefined)
            refs.push({ collection: C.orderAttempts, id: orderAttemptId(a.voucherId, a.orderId) });
        }
        break;
      default:
    }
    return refs;
  },
  follows: (event, docs) => {
    if (event.type !== 'VoucherApplied' && event.type !== 'VoucherApplicationRolledBack') return [];
    const d = event.data;
    const refs: DocRef[] = [];
    // the days of the customer's next uses (gap histograms)
    if (d.customerId !== undefined) {
      const vc = docs.get(docKey(C.voucherCustomers, voucherCustomerId(d.voucherId, d.customerId))) as
        VoucherCustomerDoc | null | undefined;
      if (vc) {
        for (const day of followingDays(vc.days, dayOf(d.appliedAt)))
          refs.push({ collection: C.daily, id: dailyId(d.voucherId, day) });
      }
    }
    // the order's other live applications, whose shares move
    const order = docs.get(docKey(C.orders, d.orderId)) as AnalyticsOrderDoc | null | undefined;
    for (const a of order?.live ?? []) {
      if (a.application_id === d.applicationId) continue;
      refs.push({ collection: C.daily, id: dailyId(a.voucher_id, a.day) });
      if (a.customer_id !== null) {
        refs.push(
          { collection: C.voucherCustomers, id: voucherCustomerId(a.voucher_id, a.customer_id) },
          { collection: C.customers, id: a.customer_id },
        );
      }
    }
    return refs;
  },
  evolve: (current, event, owned) => {
    const docs = new Docs(current, owned);
    if (event.type === 'VoucherApplied') applied(docs, event.data);
    else if (event.type === 'VoucherApplicationRolledBack') rolledBack(docs, event.data);
    else if (event.type === 'OrderAttemptsRecorded') attempts(docs, event.data);
    return docs.changes;
  },
};
