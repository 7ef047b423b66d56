/**
 * Pricing of the two basic voucher types, `percentage` and `fixed`, shared by validate and apply.
 * All amounts are integer cents.
 *
 * Discount base:
 * - Order without items (absent or empty `items`) and no product restriction:
 *   base = `order.value`; there are no lines and `applied_to` is [].
 * - Order with items: line total = price × quantity. A line is eligible when
 *   (`productIds` is empty/absent or contains its id) and its id is not in `excludedProductIds`.
 *   base = Σ eligible line totals. Without a restriction every line is eligible and
 *   base = Σ line totals: the rest of `order.value` (shipping, fees) is not discounted.
 *   The caller guarantees Σ all line totals ≤ `order.value`.
 * - A restriction is "given" when `productIds` or `excludedProductIds` is non-empty
 *   (empty arrays count as no restriction).
 * - Order with items and a restriction but no eligible line: base 0, no eligible lines
 *   (the caller reports `no_eligible_items`).
 * - A restriction on an order without items: base 0, no eligible lines — restricted
 *   vouchers need items to apply to.
 *
 * Discount:
 * - percentage: `value`% of the base, rounded half-up to the cent (`percentOf`).
 * - fixed: min(`value`, base). The discount never exceeds the base.
 *
 * Result:
 * - `applied_to`: the discount spread over the eligible lines in proportion to their line
 *   totals by largest remainder (`allocate`), one entry per eligible line in order
 *   `{ item_id, original_price: line_total, discount_amount: share, final_price: line_total - share }`.
 *   Lines repeating an item id stay separate entries. The shares add up to `discount_amount`.
 * - `final_amount` = `order.value` − `discount_amount`.
 */
import type { AppliedLine, Order } from './types.ts';
import { isCents, percentOf } from './money.ts';
import { allocate } from './allocation.ts';

export interface ProductRestriction {
  productIds?: string[];
  excludedProductIds?: string[];
}

export interface DiscountBase {
  base: number;
  eligibleLines: Array<{ item_id: string; line_total: number }>;
}

export interface Priced {
  discount_amount: number;
  final_amount: number;
  applied_to: AppliedLine[];
}

function isRestricted(r: ProductRestriction): boolean {
  return (r.productIds?.length ?? 0) > 0 || (r.excludedProductIds?.length ?? 0) > 0;
}

function isEligible(id: string, r: ProductRestriction): boolean {
  const included = !r.productIds || r.productIds.length === 0 || r.productIds.includes(id);
  return included && !(r.excludedProductIds ?? []).includes(id);
}

/** The amount a basic voucher discounts, and the order lines it applies to. */
export function discountBase(order: Order, restriction: ProductRestriction): DiscountBase {
  const items = order.items ?? [];
  if (items.length === 0) {
    return { base: isRestricted(restriction) ? 0 : order.value, eligibleLines: [] };
  }
  const eligibleLines = items
    .filter((item) => isEligible(item.id, restriction))
    .map((item) => ({ item_id: item.id, line_total: item.price * item.quantity }));
  const base = eligibleLines.reduce((sum, line) => sum + line.line_total, 0);
  return { base, eligibleLines };
}

/** The discount of a basic voucher on `base`; never above the base. Throws RangeError on bad input. */
export function basicDiscount(type: 'percentage' | 'fixed', value: number, base: number): number {
  if (!isCents(base)) throw new RangeError(`base must be non-negative integer cents, got ${String(base)}`);
  if (type === 'percentage') return percentOf(base, value);
  if (type === 'fixed') {
    if (!isCents(value)) throw new RangeError(`fixed value must be integer cents, got ${String(value)}`);
    return Math.min(value, base);
  }
  throw new RangeError(`unknown basic voucher type: ${String(type)}`);
}

/** Prices an order with a basic voucher: discount, final amount and per-line breakdown. */
export function priceBasic(
  order: Order,
  type: 'percentage' | 'fixed',
  value: number,
  restriction: ProductRestriction,
): Priced {
  const { base, eligibleLines } = discountBase(order, restriction);
  const discount = basicDiscount(type, value, base);
  // An order without items has no lines to spread over: applied_to stays [].
  const shares =
    eligibleLines.length === 0
      ? []
      : allocate(
          discount,
          eligibleLines.map((l) => l.line_total),
        );
  const applied_to: AppliedLine[] = eligibleLines.map((line, i) => ({
    item_id: line.item_id,
    original_price: line.line_total,
    discount_amount: shares[i],
    final_price: line.line_total - shares[i],
  }));
  return { discount_amount: discount, final_amount: order.value - discount, applied_to };
}
