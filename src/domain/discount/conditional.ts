/**
 * `conditional` vouchers: a discount that applies when conditions on the order and customer hold.
 * Pure.
 *
 * Condition types: `customer_segment`, `customer_region`, `item_category` (operator `eq`) and
 * `order_value`, `customer_orders_count`, `customer_registration_date` (`eq`, `gt`, `gte`, `lt`,
 * `lte`); see checks.ts for what each compares. `all_conditions_required` (default true): all
 * must hold; false: any one suffices. When too few hold: CONDITION_NOT_MET with
 * `failed_conditions`, `required_conditions` (how many must hold: all → their number, any → 1) and
 * `met_conditions` (how many hold). Otherwise `discount` / `discount_type` apply to the discount
 * base of a basic voucher.
 *
 * Example: conditions [customer_segment eq "vip", order_value gte 5000], all required,
 * 20% → customer vip, order.value 7499 without items → 7499 × 20% = 1499.8 → 1500 off.
 */
import { DomainError } from '../errors.ts';
import {
  CHECK_KINDS,
  failure,
  operatorsFor,
  runCheck,
  type Check,
  type CheckOutcome,
  type CheckType,
  type Operator,
} from './checks.ts';
import {
  boolean,
  DISCOUNT_TYPES,
  discountAmount,
  integer,
  invalidConfiguration,
  join,
  object,
  onlyKeys,
  oneOf,
  required,
  string,
  timestamp,
  type DiscountType,
} from './fields.ts';
import type { Customer, Order } from './types.ts';

export const CONDITION_TYPES = [
  'customer_segment',
  'order_value',
  'customer_registration_date',
  'customer_orders_count',
  'customer_region',
  'item_category',
] as const;

export interface ConditionalConfig {
  conditions: Check[];
  discount: number;
  discount_type: DiscountType;
  all_conditions_required: boolean;
}

/** A check's value, validated against what its type compares. */
export const checkValue = (type: CheckType, value: unknown, field: string): string | number => {
  switch (CHECK_KINDS[type]) {
    case 'integer':
      return integer(value, field, 0, 1_000_000_000_000);
    case 'timestamp':
      return timestamp(value, field);
    case 'string':
      return string(value, field);
  }
};

export const checkOperator = (type: CheckType, operator: unknown, field: string): Operator => {
  const allowed = operatorsFor(CHECK_KINDS[type]);
  if (
    typeof operator === 'string' &&
    ['eq', 'gt', 'gte', 'lt', 'lte'].includes(operator) &&
    !allowed.includes(operator as Operator)
  ) {
    throw invalidConfiguration(field, `${operator} does not apply to ${type}`, `use ${allowed.join(', ')}`);
  }
  return oneOf(operator, field, allowed, 'operator');
};

const parseCondition = (raw: unknown, i: number): Check => {
  const path = join('conditions', i);
  const c = object(raw, path);
  onlyKeys(c, ['type', 'operator', 'value'], path);
  const type = oneOf(required(c, 'type', path), join(path, 'type'), CONDITION_TYPES, 'condition type');
  const operator = checkOperator(type, required(c, 'operator', path), join(path, 'operator'));
  return { type, operator, value: checkValue(type, required(c, 'value', path), join(path, 'value')) };
};

export const parseConditional = (raw: unknown): ConditionalConfig => {
  const c = object(raw, 'config');
  onlyKeys(c, ['conditions', 'discount', 'discount_type', 'all_conditions_required'], '');
  const list = required(c, 'conditions', '');
  if (!Array.isArray(list) || list.length === 0 || list.length > 20) {
    throw invalidConfiguration(
      'conditions',
      'must be an array of 1 to 20 conditions',
      'add a condition such as {"type": "order_value", "operator": "gte", "value": 5000}',
    );
  }
  const type = oneOf(required(c, 'discount_type', ''), 'discount_type', DISCOUNT_TYPES, 'discount type');
  return {
    conditions: list.map(parseCondition),
    discount: discountAmount(required(c, 'discount', ''), type, 'discount'),
    discount_type: type,
    all_conditions_required:
      c.all_conditions_required === undefined ? true : boolean(c.all_conditions_required, 'all_conditions_required'),
  };
};

/** CONDITION_NOT_MET with the spec's details. */
export const conditionNotMet = (outcomes: CheckOutcome[], required: number, message: string): DomainError =>
  new DomainError('CONDITION_NOT_MET', message, {
    failed_conditions: outcomes.filter((o) => !o.met).map(failure),
    required_conditions: required,
    met_conditions: outcomes.filter((o) => o.met).length,
  });

export interface ConditionalDetails {
  conditions_met: string[];
  conditions_failed: Array<ReturnType<typeof failure>>;
  all_conditions_satisfied: boolean;
  discount_applicable: true;
}

/** Runs the conditions; throws CONDITION_NOT_MET when too few hold, else returns the details. */
export const checkConditional = (
  config: ConditionalConfig,
  order: Order,
  customer: Customer | undefined,
): ConditionalDetails => {
  const outcomes = config.conditions.map((check) => runCheck(check, order, customer));
  const met = outcomes.filter((o) => o.met).length;
  const needed = config.all_conditions_required ? outcomes.length : 1;
  if (met < needed) {
    throw conditionNotMet(
      outcomes,
      needed,
      config.all_conditions_required
        ? outcomes.length === 1
          ? "The voucher's condition is not met"
          : `${outcomes.length - met} of the voucher's ${outcomes.length} conditions ${outcomes.length - met === 1 ? 'is' : 'are'} not met`
        : "None of the voucher's conditions is met",
    );
  }
  return {
    conditions_met: outcomes.filter((o) => o.met).map((o) => o.type),
    conditions_failed: outcomes.filter((o) => !o.met).map(failure),
    all_conditions_satisfied: met === outcomes.length,
    discount_applicable: true,
  };
};
