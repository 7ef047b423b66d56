/**
 * `validation_rules`: an optional array on any voucher, in the spec's three rule shapes. Every
 * rule must hold (each is compiled into atomic checks, see checks.ts); otherwise
 * CONDITION_NOT_MET with `failed_conditions` (one entry per failed check), `required_conditions`
 * (the number of checks) and `met_conditions` (how many hold). Pure.
 *
 * | rule | checks |
 * |---|---|
 * | `{type: "order_value", operator, value, currency?}` | order_value `operator` value; with currency also order_currency eq currency |
 * | `{type: "items", rules: [{item_id, min_quantity?, max_quantity?}]}` | item_quantity gte min_quantity (default 1), lte max_quantity |
 * | `{type: "items", rules: [{category, min_value?}]}` | category_value gte min_value, or without min_value item_category eq category |
 * | `{type: "customer", rules: [{segment}, {min_orders}, {registration_date: {operator, value}}]}` | customer_segment eq, customer_orders_count gte, customer_registration_date `operator` |
 * A rule object may combine members (`{segment, min_orders}`): each is one check.
 */
import type { Check } from './checks.ts';
import { runCheck } from './checks.ts';
import { checkOperator, checkValue, conditionNotMet } from './conditional.ts';
import { integer, invalidConfiguration, join, object, onlyKeys, oneOf, required, string } from './fields.ts';
import type { Customer, Order } from './types.ts';

export type ValidationRule = Record<string, unknown>;

export const RULE_TYPES = ['order_value', 'items', 'customer'] as const;
export const MAX_RULES = 20;

const subRules = (rule: Record<string, unknown>, path: string): Array<Record<string, unknown>> => {
  const list = required(rule, 'rules', path);
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_RULES) {
    throw invalidConfiguration(
      join(path, 'rules'),
      `must be an array of 1 to ${MAX_RULES} rules`,
      'add at least one rule',
    );
  }
  return list.map((item, i) => object(item, join(join(path, 'rules'), i)));
};

const itemChecks = (r: Record<string, unknown>, path: string): Check[] => {
  onlyKeys(r, ['item_id', 'min_quantity', 'max_quantity', 'category', 'min_value'], path);
  if ((r.item_id === undefined) === (r.category === undefined)) {
    throw invalidConfiguration(
      path,
      'must name exactly one of item_id and category',
      'use {item_id, min_quantity, max_quantity} or {category, min_value}',
    );
  }
  if (r.item_id !== undefined) {
    if (r.min_value !== undefined)
      throw invalidConfiguration(
        join(path, 'min_value'),
        'applies to category rules only',
        'use min_quantity with item_id',
      );
    const item_id = string(r.item_id, join(path, 'item_id'));
    const min = r.min_quantity === undefined ? 1 : integer(r.min_quantity, join(path, 'min_quantity'), 0, 1_000_000);
    const checks: Check[] = [{ type: 'item_quantity', operator: 'gte', value: min, item_id }];
    if (r.max_quantity !== undefined) {
      const max = integer(r.max_quantity, join(path, 'max_quantity'), 0, 1_000_000);
      if (max < min)
        throw invalidConfiguration(
          path,
          `has min_quantity ${min} above max_quantity ${max}`,
          'make min_quantity at most max_quantity',
        );
      checks.push({ type: 'item_quantity', operator: 'lte', value: max, item_id });
    }
    return checks;
  }
  if (r.min_quantity !== undefined || r.max_quantity !== undefined) {
    throw invalidConfiguration(
      path,
      'min_quantity and max_quantity apply to item_id rules only',
      'use min_value with category',
    );
  }
  const category = string(r.category, join(path, 'category'));
  if (r.min_value === undefined) return [{ type: 'item_category', operator: 'eq', value: category }];
  return [
    {
      type: 'category_value',
      operator: 'gte',
      value: integer(r.min_value, join(path, 'min_value'), 0, 1_000_000_000_000),
      category,
    },
  ];
};

const customerChecks = (r: Record<string, unknown>, path: string): Check[] => {
  onlyKeys(r, ['segment', 'min_orders', 'registration_date'], path);
  const checks: Check[] = [];
  if (r.segment !== undefined)
    checks.push({ type: 'customer_segment', operator: 'eq', value: string(r.segment, join(path, 'segment')) });
  if (r.min_orders !== undefined)
    checks.push({
      type: 'customer_orders_count',
      operator: 'gte',
      value: integer(r.min_orders, join(path, 'min_orders'), 0, 1_000_000_000),
    });
  if (r.registration_date !== undefined) {
    const p = join(path, 'registration_date');
    const d = object(r.registration_date, p);
    onlyKeys(d, ['operator', 'value'], p);
    const operator = checkOperator('customer_registration_date', required(d, 'operator', p), join(p, 'operator'));
    checks.push({
      type: 'customer_registration_date',
      operator,
      value: checkValue('customer_registration_date', required(d, 'value', p), join(p, 'value')),
    });
  }
  if (checks.length === 0)
    throw invalidConfiguration(path, 'names no customer property', 'use segment, min_orders or registration_date');
  return checks;
};

const ruleChecks = (raw: unknown, i: number): Check[] => {
  const path = join('validation_rules', i);
  const rule = object(raw, path);
  const type = oneOf(required(rule, 'type', path), join(path, 'type'), RULE_TYPES, 'rule type');
  if (type === 'order_value') {
    onlyKeys(rule, ['type', 'operator', 'value', 'currency'], path);
    const operator = checkOperator('order_value', required(rule, 'operator', path), join(path, 'operator'));
    const checks: Check[] = [
      {
        type: 'order_value',
        operator,
        value: checkValue('order_value', required(rule, 'value', path), join(path, 'value')),
      },
    ];
    if (rule.currency !== undefined) {
      if (typeof rule.currency !== 'string' || !/^[A-Z]{3}$/.test(rule.currency)) {
        throw invalidConfiguration(join(path, 'currency'), 'must be an ISO 4217 code', 'use e.g. USD');
      }
      checks.push({ type: 'order_currency', operator: 'eq', value: rule.currency });
    }
    return checks;
  }
  onlyKeys(rule, ['type', 'rules'], path);
  const each = type === 'items' ? itemChecks : customerChecks;
  return subRules(rule, path).flatMap((r, j) => each(r, join(join(path, 'rules'), j)));
};

/** Validates `validation_rules` (INVALID_CONFIGURATION, fields named `validation_rules[i]...`) and compiles them. */
export const compileRules = (raw: unknown): Check[] => checksPerRule(raw).flat();

/** The checks of each rule, in the rules' order. */
const checksPerRule = (raw: unknown): Check[][] => {
  if (!Array.isArray(raw) || raw.length > MAX_RULES) {
    throw invalidConfiguration(
      'validation_rules',
      `must be an array of at most ${MAX_RULES} rules`,
      'send an array of rules',
    );
  }
  return raw.map(ruleChecks);
};

/** Throws CONDITION_NOT_MET unless every rule holds; returns the names of the checks (for conditions_met). */
export const checkRules = (
  rules: ValidationRule[] | undefined,
  order: Order,
  customer: Customer | undefined,
): string[] => {
  if (!rules || rules.length === 0) return [];
  // The message counts rules as the voucher defines them; the details count their checks.
  const perRule = checksPerRule(rules).map((checks) => checks.map((check) => runCheck(check, order, customer)));
  const outcomes = perRule.flat();
  const failedRules = perRule.filter((checks) => checks.some((o) => !o.met)).length;
  if (failedRules > 0) {
    const message =
      rules.length === 1
        ? "The voucher's validation rule is not met"
        : `${failedRules} of the voucher's ${rules.length} validation rules ${failedRules === 1 ? 'is' : 'are'} not met`;
    throw conditionNotMet(outcomes, outcomes.length, message);
  }
  return [...new Set(outcomes.map((o) => o.type))];
};
