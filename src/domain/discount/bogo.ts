/**
 * `bogo` (buy X get Y) pricing. Pure; all amounts integer cents.
 *
 * Eligible units: every unit of every order line whose id passes the voucher's product
 * restriction (conditions.product_ids / excluded_product_ids) AND the config's
 * `applicable_items` (empty/absent: all) / `excluded_items`. Zero-price units are units too.
 *
 * The rule ("cheapest of each group"): the eligible units are sorted by unit price, highest first
 * (equal prices keep the order's line order), and taken in groups of `buy_quantity +
 * get_quantity`. In every COMPLETE group the last `get_quantity` units (the group's cheapest) are
 * discounted, for at most `max_uses_per_order` groups; leftover units are not discounted.
 * Each discounted unit gets `get_discount`: a percentage of the unit price, or a fixed amount of
 * cents per unit (never above the unit price). A percentage is taken once on the sum of the
 * discounted unit prices, rounded half-up.
 *
 * Example (buy 1 get 1 at 100%): units 1000, 900, 800, 700, 500 → groups (1000, 900) and
 * (800, 700), 500 left over → 900 + 700 = 1600 off. With buy 2 get 1 at 50%: groups
 * (1000, 900, 800) → 800 × 50% = 400 off (two units left over).
 *
 * Why per group and not "the N cheapest of the basket": with per-group selection removing an
 * eligible unit can never raise the discount (every position's price can only fall), which
 * the "N cheapest overall" rule does not guarantee.
 *
 * `applied_to` names the lines holding discounted units; each line's share is its discounted
 * units' amount, spread by largest remainder so the shares add up to the discount exactly.
 * No eligible unit: VOUCHER_INVALID no_eligible_items; fewer than one complete group:
 * VOUCHER_INVALID insufficient_quantity.
 */
import { DomainError } from '../errors.ts';
import { allocate } from './allocation.ts';
import {
  DISCOUNT_TYPES,
  discountAmount,
  integer,
  object,
  onlyKeys,
  oneOf,
  required,
  stringList,
  invalidConfiguration,
  type DiscountType,
} from './fields.ts';
import { percentOf } from './money.ts';
import type { AppliedLine, Order } from './types.ts';

export interface BogoConfig {
  buy_quantity: number;
  get_quantity: number;
  get_discount: number;
  get_discount_type: DiscountType;
  applicable_items: string[];
  excluded_items: string[];
  min_order_value?: number;
  max_uses_per_order?: number;
}

const KEYS = [
  'buy_quantity',
  'get_quantity',
  'get_discount',
  'get_discount_type',
  'applicable_items',
  'excluded_items',
  'min_order_value',
  'max_uses_per_order',
];

/** Validates a bogo config (INVALID_CONFIGURATION) and fills the defaults: 100% off the get units. */
export const parseBogo = (raw: unknown): BogoConfig => {
  const c = object(raw, 'config');
  onlyKeys(c, KEYS, '');
  const type =
    c.get_discount_type === undefined
      ? 'percentage'
      : oneOf(c.get_discount_type, 'get_discount_type', DISCOUNT_TYPES, 'discount type');
  const config: BogoConfig = {
    buy_quantity: integer(required(c, 'buy_quantity', ''), 'buy_quantity', 1, 1000),
    get_quantity: integer(required(c, 'get_quantity', ''), 'get_quantity', 1, 1000),
    get_discount: c.get_discount === undefined ? 100 : discountAmount(c.get_discount, type, 'get_discount'),
    get_discount_type: type,
    applicable_items: c.applicable_items === undefined ? [] : stringList(c.applicable_items, 'applicable_items'),
    excluded_items: c.excluded_items === undefined ? [] : stringList(c.excluded_items, 'excluded_items'),
  };
  if (c.min_order_value !== undefined)
    config.min_order_value = integer(c.min_order_value, 'min_order_value', 0, 1_000_000_000_000);
  if (c.max_uses_per_order !== undefined)
    config.max_uses_per_order = integer(c.max_uses_per_order, 'max_uses_per_order', 1, 1_000_000);
  const both = config.applicable_items.find((id) => config.excluded_items.includes(id));
  if (both !== undefined) {
    throw invalidConfiguration(
      'excluded_items',
      `names ${both}, which applicable_items also names`,
      'list an item in only one of the two',
    );
  }
  return config;
};

export interface BogoPriced {
  discount_amount: number;
  applied_to: AppliedLine[];
  details: {
    bogo_eligible_items: number;
    bogo_applied_items: number;
    discount_applied: number;
    remaining_eligibility: number;
  };
}

/** Discounted positions (0-based, in the sorted unit list) below `x`: `get` per complete group. */
const discountedBelow = (x: number, buy: number, group: number, limit: number): number => {
  const upTo = Math.min(x, limit);
  return Math.floor(upTo / group) * (group - buy) + Math.max(0, (upTo % group) - buy);
};

export const priceBogo = (order: Order, config: BogoConfig, isEligible: (itemId: string) => boolean): BogoPriced => {
  const inConfig = (id: string) =>
    (config.applicable_items.length === 0 || config.applicable_items.includes(id)) &&
    !config.excluded_items.includes(id);
  const lines = (order.items ?? [])
    .map((item, index) => ({ item, index }))
    .filter(({ item }) => isEligible(item.id) && inConfig(item.id))
    .sort((a, b) => b.item.price - a.item.price || a.index - b.index);
  const units = lines.reduce((sum, l) => sum + l.item.quantity, 0);
  if (units === 0) {
    throw new DomainError('VOUCHER_INVALID', 'No item of the order is eligible for this buy-X-get-Y voucher', {
      reason: 'no_eligible_items',
      applicable_items: config.applicable_items,
      excluded_items: config.excluded_items,
    });
  }
  const group = config.buy_quantity + config.get_quantity;
  const possible = Math.floor(units / group);
  if (possible === 0) {
    throw new DomainError(
      'VOUCHER_INVALID',
      `The order needs ${group} eligible units (buy ${config.buy_quantity}, get ${config.get_quantity})`,
      {
        reason: 'insufficient_quantity',
        min_quantity: group,
        current_quantity: units,
      },
    );
  }
  const groups = Math.min(possible, config.max_uses_per_order ?? possible);
  const limit = groups * group;
  // Per line (in sorted order): the units at positions [start, start + quantity).
  let start = 0;
  const discounted = lines
    .map(({ item }) => {
      const count =
        discountedBelow(start + item.quantity, config.buy_quantity, group, limit) -
        discountedBelow(start, config.buy_quantity, group, limit);
      start += item.quantity;
      const perUnit = config.get_discount_type === 'fixed' ? Math.min(config.get_discount, item.price) : item.price;
      return { item, count, weight: perUnit * count };
    })
    .filter((l) => l.count > 0);
  const weightSum = discounted.reduce((sum, l) => sum + l.weight, 0);
  const discount = config.get_discount_type === 'fixed' ? weightSum : percentOf(weightSum, config.get_discount);
  const shares = allocate(
    discount,
    discounted.map((l) => l.weight),
  );
  const applied_to = discounted
    .map((l, i) => ({ l, share: shares[i]! }))
    .sort((a, b) => order.items!.indexOf(a.l.item) - order.items!.indexOf(b.l.item))
    .map(({ l, share }) => {
      const total = l.item.price * l.item.quantity;
      return { item_id: l.item.id, original_price: total, discount_amount: share, final_price: total - share };
    });
  const appliedUnits = groups * config.get_quantity;
  const capped = config.max_uses_per_order !== undefined && groups >= config.max_uses_per_order;
  return {
    discount_amount: discount,
    applied_to,
    details: {
      bogo_eligible_items: units,
      bogo_applied_items: appliedUnits,
      discount_applied: discount,
      remaining_eligibility: capped ? 0 : (groups + 1) * group - units,
    },
  };
};
