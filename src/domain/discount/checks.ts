/**
 * Atomic checks shared by `conditional` vouchers and `validation_rules`: one fact of the order or
 * customer compared with one expected value. Pure.
 *
 * | check type                  | actual value                                        | value    | operators |
 * |-----------------------------|-----------------------------------------------------|----------|-----------|
 * | order_value                 | order.value (cents)                                 | integer  | all five  |
 * | order_currency              | order.currency (an order without one passes)        | string   | eq        |
 * | customer_segment            | customer.segment                                    | string   | eq        |
 * | customer_region             | customer.region                                     | string   | eq        |
 * | customer_orders_count       | customer.orders_count                               | integer  | all five  |
 * | customer_registration_date  | customer.registration_date (compared as instants)   | timestamp| all five  |
 * | item_category               | the categories of the order's items (any matches)   | string   | eq        |
 * | item_quantity               | Σ quantity of the lines with `item_id` (0 if none)   | integer  | all five  |
 * | category_value              | Σ line totals of the items in `category` (cents)    | integer  | all five  |
 * A fact the request does not carry (no customer.segment, ...) fails the check, `actual: null`.
 */
import type { Customer, Order } from './types.ts';

export const OPERATORS = ['eq', 'gt', 'gte', 'lt', 'lte'] as const;
export type Operator = (typeof OPERATORS)[number];

export type CheckType =
  | 'order_value'
  | 'order_currency'
  | 'customer_segment'
  | 'customer_region'
  | 'customer_orders_count'
  | 'customer_registration_date'
  | 'item_category'
  | 'item_quantity'
  | 'category_value';

export type ValueKind = 'integer' | 'string' | 'timestamp';

export const CHECK_KINDS: Record<CheckType, ValueKind> = {
  order_value: 'integer',
  order_currency: 'string',
  customer_segment: 'string',
  customer_region: 'string',
  customer_orders_count: 'integer',
  customer_registration_date: 'timestamp',
  item_category: 'string',
  item_quantity: 'integer',
  category_value: 'integer',
};

/** Operators a kind of value allows: strings compare for equality only. */
export const operatorsFor = (kind: ValueKind): readonly Operator[] => (kind === 'string' ? ['eq'] : OPERATORS);

export interface Check {
  type: CheckType;
  operator: Operator;
  value: string | number;
  item_id?: string;
  category?: string;
}

/** One check's outcome, in the spec's `failed_conditions` shape. */
export interface CheckOutcome {
  type: CheckType;
  met: boolean;
  expected: Record<string, unknown>;
  actual: unknown;
}

const compare = (actual: number, operator: Operator, expected: number): boolean => {
  switch (operator) {
    case 'eq':
      return actual === expected;
    case 'gt':
      return actual > expected;
    case 'gte':
      return actual >= expected;
    case 'lt':
      return actual < expected;
    case 'lte':
      return actual <= expected;
  }
};

const lineTotal = (item: { price: number; quantity: number }): number => item.price * item.quantity;

const actualOf = (check: Check, order: Order, customer: Customer | undefined): unknown => {
  const items = order.items ?? [];
  switch (check.type) {
    case 'order_value':
      return order.value;
    case 'order_currency':
      return order.currency ?? null;
    case 'customer_segment':
      return customer?.segment ?? null;
    case 'customer_region':
      return customer?.region ?? null;
    case 'customer_orders_count':
      return customer?.orders_count ?? null;
    case 'customer_registration_date':
      return customer?.registration_date ?? null;
    case 'item_category':
      return [...new Set(items.map((i) => i.category).filter((c) => c !== undefined))];
    case 'item_quantity':
      return items.filter((i) => i.id === check.item_id).reduce((sum, i) => sum + i.quantity, 0);
    case 'category_value':
      return items.filter((i) => i.category === check.category).reduce((sum, i) => sum + lineTotal(i), 0);
  }
};

const holds = (check: Check, actual: unknown): boolean => {
  if (check.type === 'order_currency' && actual === null) return true; // like currency_mismatch: only a known currency can differ
  if (actual === null || actual === undefined) return false;
  if (check.type === 'item_category') return (actual as string[]).includes(String(check.value));
  switch (CHECK_KINDS[check.type]) {
    case 'string':
      return actual === check.value;
    case 'integer':
      return compare(actual as number, check.operator, check.value as number);
    case 'timestamp':
      return compare(Date.parse(String(actual)), check.operator, Date.parse(String(check.value)));
  }
};

export const runCheck = (check: Check, order: Order, customer: Customer | undefined): CheckOutcome => {
  const actual = actualOf(check, order, customer);
  const expected: Record<string, unknown> = { operator: check.operator, value: check.value };
  if (check.item_id !== undefined) expected.item_id = check.item_id;
  if (check.category !== undefined) expected.category = check.category;
  return { type: check.type, met: holds(check, actual), expected, actual };
};

/** The failure entry of CONDITION_NOT_MET's `failed_conditions`. */
export const failure = (o: CheckOutcome) => ({ type: o.type, expected: o.expected, actual: o.actual });
