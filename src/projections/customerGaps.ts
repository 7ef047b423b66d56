/**
 * Exact unique-customer and repeat-usage counts for any window of at most 90 days, read from at
 * most 90 daily documents (no per-customer reads).
 *
 * Take one customer's live uses of a voucher in day order, u1 ≤ u2 ≤ … (several on one day are
 * interchangeable). Give each use u_i two gaps, in days: g1 = u_i − u_(i−1) and g2 = u_i − u_(i−2)
 * (FAR when there is no such use or it is FAR or more days back). For a window [a, b] and a use
 * on day d in it:
 * - the customer's first use in the window is the one use with g1 > d − a (the use before it is
 *   before a), so unique customers = the uses in [a, b] with g1 > d − a;
 * - the customer's second use in the window is the one use with g1 ≤ d − a < g2 (the use before it
 *   is in the window, the one before that is not), so repeat usage (customers with two or more
 *   uses in the window) = the uses in [a, b] with g1 ≤ d − a < g2.
 * A window has at most 90 days, so d − a ≤ 89 and every gap of 90 days or more behaves alike:
 * they are all stored as FAR. Each daily document keeps a histogram of its uses' gap pairs
 * ("g1.g2" → uses), and the query sums at most 90 small histograms.
 *
 * Adding (or rolling back) a use on day x changes the gaps of that use and of the customer's next
 * two uses after x (placing the new use last among those on day x), so an event updates at most
 * three daily documents; the days of the next uses come from the customer's per-day uses.
 */
/** Per day of one customer with one voucher: [uses, spend (final amounts), order value]. */
export type DayEntry = [uses: number, spend: number, orderValue: number];

/** Gaps of FAR days or more (or no earlier use): longer than any window, so all alike. */
export const FAR = 90;

/** "g1.g2" → uses of the day with those gaps (keys with 0 uses are removed). */
export type GapHistogram = Record<string, number>;

const DAY_MS = 86_400_000;
/** Days since the epoch of a `YYYY-MM-DD` UTC day. */
export const dayNumber = (day: string): number => Date.parse(`${day}T00:00:00Z`) / DAY_MS;

const gap = (later: string, earlier: string | undefined): number =>
  earlier === undefined ? FAR : Math.min(FAR, dayNumber(later) - dayNumber(earlier));

const gapKey = (day: string, previous: string | undefined, beforePrevious: string | undefined): string =>
  `${gap(day, previous)}.${gap(day, beforePrevious)}`;

/** The customer's two latest uses on or before a day and two earliest after it (undefined: none). */
export interface Neighbours {
  /** p1 the latest use on or before the day, p2 the one before it. */
  before: [p1: string | undefined, p2: string | undefined];
  /** n1 the earliest use after the day, n2 the one after it. */
  after: [n1: string | undefined, n2: string | undefined];
}

/**
 * Neighbours of `day` among a customer's live uses per day, counting `minus` fewer uses on `day`
 * itself (1 for a rollback: the neighbours once the use is removed). One pass over the days.
 */
export const neighbours = (days: Readonly<Record<string, DayEntry>>, day: string, minus = 0): Neighbours => {
  let b1: string | undefined;
  let b1n = 0;
  let b2: string | undefined; // latest two days ≤ day
  let a1: string | undefined;
  let a1n = 0;
  let a2: string | undefined; // earliest two days > day
  for (const [d, entry] of Object.entries(days)) {
    const uses = entry[0] - (d === day ? minus : 0);
    if (uses <= 0) continue;
    if (d <= day) {
      if (b1 === undefined || d > b1) {
        b2 = b1;
        b1 = d;
        b1n = uses;
      } else if (b2 === undefined || d > b2) b2 = d;
    } else if (a1 === undefined || d < a1) {
      a2 = a1;
      a1 = d;
      a1n = uses;
    } else if (a2 === undefined || d < a2) a2 = d;
  }
  return { before: [b1, b1n >= 2 ? b1 : b2], after: [a1, a1n >= 2 ? a1 : a2] };
};

/** Changes to the daily histograms, day → key → delta (zero deltas left out). */
export type GapChanges = Map<string, Map<string, number>>;

/**
 * What adding a use on `day` (sign 1) or removing it (sign −1) changes, given the neighbours
 * without that use: the use's own gaps and those of the next two uses.
 */
export const gapChanges = (
  day: string,
  { before: [p1, p2], after: [n1, n2] }: Neighbours,
  sign: 1 | -1,
): GapChanges => {
  const changes: GapChanges = new Map();
  const add = (d: string, key: string, delta: number) => {
    const forDay = changes.get(d) ?? changes.set(d, new Map()).get(d)!;
    const next = (forDay.get(key) ?? 0) + sign * delta;
    if (next === 0) forDay.delete(key);
    else forDay.set(key, next);
    if (forDay.size === 0) changes.delete(d);
  };
  add(day, gapKey(day, p1, p2), 1);
  if (n1 !== undefined) {
    add(n1, gapKey(n1, p1, p2), -1);
    add(n1, gapKey(n1, day, p1), 1);
  }
  if (n2 !== undefined) {
    add(n2, gapKey(n2, n1, p1), -1);
    add(n2, gapKey(n2, n1, day), 1);
  }
  return changes;
};

/** A histogram with changes applied (keys reaching 0 removed). */
export const applyGapChanges = (
  histogram: Readonly<GapHistogram>,
  changes: ReadonlyMap<string, number>,
): GapHistogram => {
  const out = { ...histogram };
  for (const [key, delta] of changes) {
    const next = (out[key] ?? 0) + delta;
    if (next === 0) delete out[key];
    else out[key] = next;
  }
  return out;
};

/** Days other than `day` whose histograms a use on `day` changes: those of the next two uses. */
export const followingDays = (days: Readonly<Record<string, DayEntry>>, day: string): string[] => {
  const { after } = neighbours(days, day);
  return [...new Set(after.filter((d): d is string => d !== undefined))];
};

/** Unique customers and repeat usage of a window starting on `from`, from its days' histograms. */
export const countCustomers = (
  days: Iterable<{ date: string; gaps?: GapHistogram }>,
  from: string,
): { unique: number; repeat: number } => {
  const start = dayNumber(from);
  let unique = 0;
  let repeat = 0;
  for (const doc of days) {
    const offset = dayNumber(doc.date) - start;
    for (const [key, uses] of Object.entries(doc.gaps ?? {})) {
      const dot = key.indexOf('.');
      const g1 = Number(key.slice(0, dot));
      if (g1 > offset) unique += uses;
      else if (Number(key.slice(dot + 1)) > offset) repeat += uses;
    }
  }
  return { unique, repeat };
};
