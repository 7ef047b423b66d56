/**
 * `stackable` vouchers: config and pricing. Pure; all amounts integer cents.
 *
 * The discount `base_discount` (`base_discount_type` percentage or fixed) is taken from the
 * amount the order's earlier vouchers left: base = min(eligible base of a basic voucher,
 * order.value − discounts already on the order). Then `max_total_discount` (a percentage of
 * order.value, the smallest of all stackable vouchers on the order, this one included) caps the
 * order's total discount: this voucher gets at most cap − discounts already on the order; when
 * nothing is left: STACKING_CONFLICT `max_total_discount_reached`.
 *
 * Example: order.value 10000; A (priority 1, 10%) applied first: 1000 off; then B (priority 2,
 * 15%, max_total_discount 20): base 10000 − 1000 = 9000 → 1350, cap 20% of 10000 = 2000 minus
 * 1000 already → 1000 off for B; total 2000, final 8000.
 */
import { VOUCHER_TYPES, type StackContext, type StackRules } from './stacking.ts';
import { basicDiscount, discountBase, type ProductRestriction } from './basic.ts';
import { allocate } from './allocation.ts';
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
import { hasAtMostTwoDecimals, percentOf } from './money.ts';
import type { AppliedLine, Order } from './types.ts';
import { DomainError } from '../errors.ts';

export interface StackableConfig {
  base_discount: number;
  base_discount_type: DiscountType;
  stack_rules: StackRules;
  priority: number;
}

const typeList = (value: unknown, field: string): StackRules['stackable_with'] => {
  if (!Array.isArray(value) || value.length > VOUCHER_TYPES.length) {
    throw invalidConfiguration(field, 'must be an array of voucher types', `use some of ${VOUCHER_TYPES.join(', ')}`);
  }
  return value.map((t, i) => oneOf(t, join(field, i), VOUCHER_TYPES, 'voucher type'));
};

const parseRules = (raw: unknown): StackRules => {
  const r = object(raw, 'stack_rules');
  onlyKeys(r, ['max_stack_count', 'max_total_discount', 'stackable_with', 'excluded_types'], 'stack_rules');
  const rules: StackRules = {};
  if (r.max_stack_count !== undefined)
    rules.max_stack_count = integer(r.max_stack_count, 'stack_rules.max_stack_count', 1, 100);
  if (r.max_total_discount !== undefined) {
    const v = r.max_total_discount;
    if (typeof v !== 'number' || !(v > 0 && v <= 100) || !hasAtMostTwoDecimals(v)) {
      throw invalidConfiguration(
        'stack_rules.max_total_discount',
        'must be a percentage of the order value above 0 and at most 100',
        'use e.g. 30 for at most 30% off in total',
      );
    }
    rules.max_total_discount = v;
  }
  if (r.stackable_with !== undefined) rules.stackable_with = typeList(r.stackable_with, 'stack_rules.stackable_with');
  if (r.excluded_types !== undefined) rules.excluded_types = typeList(r.excluded_types, 'stack_rules.excluded_types');
  const both = rules.stackable_with?.find((t) => rules.excluded_types?.includes(t));
  if (both !== undefined) {
    throw invalidConfiguration(
      'stack_rules.excluded_types',
      `names ${both}, which stackable_with also names`,
      'list a type in only one of the two',
    );
  }
  return rules;
};

export const parseStackable = (raw: unknown): StackableConfig => {
  const c = object(raw, 'config');
  onlyKeys(c, ['base_discount', 'base_discount_type', 'stack_rules', 'priority'], '');
  const type = oneOf(required(c, 'base_discount_type', ''), 'base_discount_type', DISCOUNT_TYPES, 'discount type');
  return {
    base_discount: discountAmount(required(c, 'base_discount', ''), type, 'base_discount'),
    base_discount_type: type,
    stack_rules: c.stack_rules === undefined ? {} : parseRules(c.stack_rules),
    priority: c.priority === undefined ? 0 : integer(c.priority, 'priority', 0, 1_000_000),
  };
};

export interface StackablePriced {
  discount_amount: number;
  applied_to: AppliedLine[];
  details: { stack_position: number; prior_discount: number; amount_left: number; max_total_discount: number | null };
}

export const priceStackable = (
  order: Order,
  config: StackableConfig,
  restriction: ProductRestriction,
  stack: StackContext,
): StackablePriced => {
  const { base: eligible, eligibleLines } = discountBase(order, restriction);
  const left = Math.max(0, order.value - stack.priorDiscount);
  let discount = basicDiscount(config.base_discount_type, config.base_discount, Math.min(eligible, left));
  if (stack.cap) {
    const allowed = percentOf(order.value, stack.cap.percent) - stack.priorDiscount;
    if (allowed <= 0 && stack.priorDiscount > 0) {
      throw new DomainError(
        'STACKING_CONFLICT',
        `The order already has the most discount ${stack.cap.code} allows (${stack.cap.percent}% of the order value)`,
        {
          conflicting_voucher: stack.cap.code,
          conflict_reason: 'max_total_discount_reached',
          stackable_types: stack.stackableTypes,
        },
      );
    }
    discount = Math.min(discount, Math.max(0, allowed));
  }
  const shares =
    eligibleLines.length === 0
      ? []
      : allocate(
          discount,
          eligibleLines.map((l) => l.line_total),
        );
  return {
    discount_amount: discount,
    applied_to: eligibleLines.map((l, i) => ({
      item_id: l.item_id,
      original_price: l.line_total,
      discount_amount: shares[i]!,
      final_price: l.line_total - shares[i]!,
    })),
    details: {
      stack_position: stack.position,
      prior_discount: stack.priorDiscount,
      amount_left: left,
      max_total_discount: stack.cap?.percent ?? null,
    },
  };
};
