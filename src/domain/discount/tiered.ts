/**
 * `tiered` pricing. Pure; all amounts integer cents.
 *
 * A tier matches when `min_value <= order.value <= max_value` (`max_value` null: no upper bound).
 * Tiers are sorted by `min_value` and may not overlap (checked at create and update), so at most
 * one tier matches; the spec's two selection statements ("highest applicable" and "first match")
 * then agree. Gaps are allowed: an order value in a gap matches no tier and gets
 * VOUCHER_INVALID `{reason: "no_matching_tier", current_value, tiers}`.
 *
 * The matching tier's discount applies to the discount base of a basic voucher (the eligible
 * lines, or order.value for an order without items), so product restrictions work as for the
 * basic types. Example: tiers [0..4999: 5%], [5000..9999: 10%], [10000..null: 1500 fixed];
 * order.value 7499 with no items → tier 2, 7499 × 10% = 749.9 → 750 off, final 6749.
 */
import { DomainError } from '../errors.ts';
import {
  DISCOUNT_TYPES,
  discountAmount,
  integer,
  invalidConfiguration,
  join,
  object,
  onlyKeys,
  oneOf,
  required,
  type DiscountType,
} from './fields.ts';
import type { Order } from './types.ts';

export interface Tier {
  min_value: number;
  max_value: number | null;
  discount: number;
  discount_type: DiscountType;
}

export interface TieredConfig {
  tiers: Tier[];
  currency?: string;
}

export const MAX_TIERS = 50;
const MAX_CENTS = 1_000_000_000_000;

const parseTier = (raw: unknown, i: number): Tier => {
  const path = join('tiers', i);
  const t = object(raw, path);
  onlyKeys(t, ['min_value', 'max_value', 'discount', 'discount_type'], path);
  const min = integer(required(t, 'min_value', path), join(path, 'min_value'), 0, MAX_CENTS);
  const max =
    t.max_value === null || t.max_value === undefined
      ? null
      : integer(t.max_value, join(path, 'max_value'), 0, MAX_CENTS);
  if (max !== null && min > max) {
    throw invalidConfiguration(
      path,
      `has min_value ${min} above max_value ${max}`,
      'make min_value at most max_value, or set max_value to null for no upper bound',
    );
  }
  const type = oneOf(required(t, 'discount_type', path), join(path, 'discount_type'), DISCOUNT_TYPES, 'discount type');
  return {
    min_value: min,
    max_value: max,
    discount: discountAmount(required(t, 'discount', path), type, join(path, 'discount')),
    discount_type: type,
  };
};

/** Validates a tiered config (INVALID_CONFIGURATION): 1 to 50 tiers, ordered, not overlapping. */
export const parseTiered = (raw: unknown): TieredConfig => {
  const c = object(raw, 'config');
  onlyKeys(c, ['tiers', 'currency'], '');
  const list = required(c, 'tiers', '');
  if (!Array.isArray(list) || list.length === 0)
    throw invalidConfiguration('tiers', 'must be a non-empty array', 'add at least one tier');
  if (list.length > MAX_TIERS)
    throw invalidConfiguration('tiers', `has ${list.length} tiers; at most ${MAX_TIERS} are allowed`, 'merge tiers');
  const tiers = list.map(parseTier);
  for (let i = 1; i < tiers.length; i += 1) {
    const previous = tiers[i - 1]!;
    const tier = tiers[i]!;
    if (tier.min_value <= previous.min_value) {
      throw invalidConfiguration(
        'tiers',
        `are not ordered: tier ${i} starts at ${tier.min_value}, not above tier ${i - 1} (${previous.min_value})`,
        'list tiers by ascending min_value',
      );
    }
    if (previous.max_value === null || previous.max_value >= tier.min_value) {
      throw invalidConfiguration(
        'tiers',
        `overlap: tier ${i - 1} (${previous.min_value} to ${previous.max_value ?? 'no limit'}) reaches tier ${i} (from ${tier.min_value})`,
        `end tier ${i - 1} at ${tier.min_value - 1} (bounds are inclusive)`,
      );
    }
  }
  const config: TieredConfig = { tiers };
  if (c.currency !== undefined) {
    if (typeof c.currency !== 'string' || !/^[A-Z]{3}$/.test(c.currency))
      throw invalidConfiguration('currency', 'must be an ISO 4217 code', 'use e.g. USD');
    config.currency = c.currency;
  }
  return config;
};

/** The one tier matching the order value, or VOUCHER_INVALID no_matching_tier. */
export const matchTier = (order: Order, config: TieredConfig): Tier => {
  const tier = config.tiers.find(
    (t) => t.min_value <= order.value && (t.max_value === null || order.value <= t.max_value),
  );
  if (tier) return tier;
  throw new DomainError('VOUCHER_INVALID', `No tier of this voucher matches the order value ${order.value}`, {
    reason: 'no_matching_tier',
    current_value: order.value,
    currency: order.currency ?? config.currency ?? null,
    tiers: config.tiers,
  });
};
