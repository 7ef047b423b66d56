/**
 * Stacking several vouchers on one order. Pure: the same function decides on the order stream
 * (the race-free authority, see domain/order/decide.ts) and inside `evaluate` (so validate with
 * `order.id` and apply answer alike).
 *
 * Given the vouchers already on the order (in the order they were attached) and a new one:
 * 1. none: no constraint (any voucher may be the first).
 * 2. the new voucher is not of type `stackable`: conflict `not_stackable` with the first voucher
 *    (an order carries at most one non-stackable voucher, and only as its first).
 * 3. for each voucher E on the order, in attachment order, the first failure is reported:
 *    - E's type must be allowed by the new voucher's stack_rules: in `stackable_with` (absent:
 *      every type) → else `type_not_stackable`; not in `excluded_types` → else `type_excluded`;
 *    - if E is stackable, the same both ways: `stackable` allowed by E's rules;
 *    - `max_stack_count` of the new voucher and of every stackable E: the number of vouchers on
 *      the order with the new one must not exceed it → `max_stack_count`;
 *    - priority: discounts are computed in priority order (lower number first) and a recorded
 *      application never changes, so a voucher whose priority number is LOWER than a stackable
 *      E's cannot follow it → `priority_order` (apply stacked vouchers in priority order);
 *    - E was applied to another order value → `order_value_mismatch`.
 * Details: `{conflicting_voucher (code), conflicting_voucher_id, conflict_reason, stackable_types}`
 * where `stackable_types` lists the types the new voucher may stack with: none for a voucher that
 * is not `stackable` (it can only be an order's first voucher), else those its stack_rules allow.
 */
import { DomainError } from '../errors.ts';
import type { VoucherType } from '../voucher/events.ts';

export const VOUCHER_TYPES: readonly VoucherType[] = [
  'percentage',
  'fixed',
  'bogo',
  'tiered',
  'conditional',
  'stackable',
];

export interface StackRules {
  max_stack_count?: number;
  max_total_discount?: number;
  stackable_with?: VoucherType[];
  excluded_types?: VoucherType[];
}

/** What stacking needs to know of a voucher. */
export interface StackProfile {
  voucherId: string;
  code: string;
  type: VoucherType;
  priority: number;
  stackRules?: StackRules;
}

/** A voucher on an order: its discount is null while its application is in flight. */
export interface OrderVoucher extends StackProfile {
  applicationId: string;
  orderValue: number;
  discountAmount: number;
}

export interface StackContext {
  /** Discounts of the vouchers already on the order. */
  priorDiscount: number;
  /** The tightest max_total_discount among the stackable vouchers (with the voucher that sets it). */
  cap?: { percent: number; code: string };
  /** 1-based position of the new voucher on the order. */
  position: number;
  stackableTypes: VoucherType[];
}

/** The types a voucher may join on an order: none unless it is `stackable`, then as its stack_rules allow. */
export const stackableTypes = (type: VoucherType, rules: StackRules | undefined): VoucherType[] =>
  type !== 'stackable'
    ? []
    : VOUCHER_TYPES.filter(
        (t) => (rules?.stackable_with ?? VOUCHER_TYPES).includes(t) && !(rules?.excluded_types ?? []).includes(t),
      );

const allows = (rules: StackRules | undefined, type: VoucherType): 'type_not_stackable' | 'type_excluded' | null => {
  if (rules?.stackable_with !== undefined && !rules.stackable_with.includes(type)) return 'type_not_stackable';
  if (rules?.excluded_types?.includes(type)) return 'type_excluded';
  return null;
};

const conflictReason = (
  existing: OrderVoucher,
  incoming: StackProfile,
  count: number,
  orderValue: number,
): string | null => {
  const fromIncoming = allows(incoming.stackRules, existing.type);
  if (fromIncoming) return fromIncoming;
  if (existing.type === 'stackable') {
    const fromExisting = allows(existing.stackRules, incoming.type);
    if (fromExisting) return fromExisting;
    if (existing.stackRules?.max_stack_count !== undefined && count > existing.stackRules.max_stack_count)
      return 'max_stack_count';
    if (incoming.priority < existing.priority) return 'priority_order';
  }
  if (incoming.stackRules?.max_stack_count !== undefined && count > incoming.stackRules.max_stack_count)
    return 'max_stack_count';
  if (existing.orderValue !== orderValue) return 'order_value_mismatch';
  return null;
};

const MESSAGES: Record<string, string> = {
  not_stackable: 'is not stackable and the order already carries a voucher',
  type_not_stackable: 'cannot be combined with a voucher of that type',
  type_excluded: 'excludes combination with a voucher of that type',
  max_stack_count: 'would exceed the most vouchers allowed on one order',
  priority_order: 'has a lower priority number and must be applied before',
  order_value_mismatch: 'is applied to another order value than',
};

const stackingConflict = (
  incoming: StackProfile,
  types: VoucherType[],
  existing: OrderVoucher,
  reason: string,
): DomainError =>
  new DomainError('STACKING_CONFLICT', `Voucher ${incoming.code} ${MESSAGES[reason]} ${existing.code}`, {
    conflicting_voucher: existing.code,
    conflicting_voucher_id: existing.voucherId,
    conflict_reason: reason,
    stackable_types: types,
  });

/** Checks compatibility with the vouchers on the order and returns the pricing context. */
export const stackContext = (onOrder: OrderVoucher[], incoming: StackProfile, orderValue: number): StackContext => {
  const types = stackableTypes(incoming.type, incoming.stackRules);
  const others = onOrder.filter((v) => v.voucherId !== incoming.voucherId);
  if (others.length > 0 && incoming.type !== 'stackable')
    throw stackingConflict(incoming, types, others[0]!, 'not_stackable');
  const count = others.length + 1;
  for (const existing of others) {
    const reason = conflictReason(existing, incoming, count, orderValue);
    if (reason) throw stackingConflict(incoming, types, existing, reason);
  }
  let cap: StackContext['cap'];
  for (const v of [incoming, ...others]) {
    const percent = v.type === 'stackable' ? v.stackRules?.max_total_discount : undefined;
    if (percent !== undefined && (cap === undefined || percent < cap.percent)) cap = { percent, code: v.code };
  }
  const priorDiscount = others.reduce((sum, v) => sum + v.discountAmount, 0);
  return { priorDiscount, ...(cap ? { cap } : {}), position: count, stackableTypes: types };
};
