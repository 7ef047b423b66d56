import { DomainError, invalidRequest } from '../errors.ts';
import { isoSeconds } from '../clock.ts';
import { priceBasic, type Priced, type ProductRestriction } from '../discount/basic.ts';
import { priceBogo } from '../discount/bogo.ts';
import { checkConditional } from '../discount/conditional.ts';
import { isAdvanced, parseConfig } from '../discount/configs.ts';
import { checkRules } from '../discount/rules.ts';
import { priceStackable } from '../discount/stackable.ts';
import { stackContext, type OrderVoucher, type StackContext, type StackProfile } from '../discount/stacking.ts';
import { matchTier } from '../discount/tiered.ts';
import type { AppliedLine, Customer, Order } from '../discount/types.ts';
import { effectiveStatus, type Voucher } from './state.ts';

export interface ValidationDetails {
  min_order_value_met: boolean;
  usage_limit_not_exceeded: boolean;
  valid_date_range: boolean;
  customer_eligible?: boolean;
  /** The advanced types add their own members (bogo_*, order_value/applicable_tier, conditions_*, stack_*). */
  [member: string]: unknown;
}

/** The outcome of evaluating a voucher against an order: the validation result of the spec. */
export interface Evaluation {
  is_valid: true;
  voucher: { id: string; code: string; type: string; value: number | null };
  discount_amount: number;
  final_amount: number;
  currency: string | null;
  validation_details: ValidationDetails;
  applied_to: AppliedLine[];
  conditions_met: string[];
}

const invalid = (reason: string, message: string, extra: Record<string, unknown> = {}): DomainError =>
  new DomainError('VOUCHER_INVALID', message, { reason, ...extra });

/** Order-shape checks that no schema can express. */
const checkOrder = (order: Order): void => {
  const lines = (order.items ?? []).reduce((sum, item) => sum + item.price * item.quantity, 0);
  if (!Number.isSafeInteger(lines))
    throw invalidRequest([{ field: 'order.items', message: 'line totals are too large' }]);
  if (lines > order.value) {
    throw invalidRequest([
      { field: 'order.items', message: `line totals (${lines}) exceed order.value (${order.value})` },
    ]);
  }
};

const checkAvailability = (voucher: Voucher, order: Order, now: Date): void => {
  const c = voucher.conditions;
  if (voucher.status === 'inactive') throw invalid('inactive', `Voucher ${voucher.code} is inactive`);
  if (effectiveStatus(voucher, now) === 'expired') {
    throw new DomainError('VOUCHER_EXPIRED', `Voucher ${voucher.code} has expired`, {
      expired_at: c.valid_until ?? null,
      current_time: isoSeconds(now),
    });
  }
  if (c.valid_from !== undefined && Date.parse(c.valid_from) > now.getTime()) {
    throw invalid('not_yet_valid', `Voucher ${voucher.code} is not valid before ${c.valid_from}`, {
      valid_from: c.valid_from,
      current_time: isoSeconds(now),
    });
  }
  if (voucher.currency !== undefined && order.currency !== undefined && order.currency !== voucher.currency) {
    throw invalid('currency_mismatch', `Voucher ${voucher.code} is for ${voucher.currency} orders`, {
      required_currency: voucher.currency,
      current_currency: order.currency,
    });
  }
  minOrderValue(voucher, order, c.min_order_value);
};

const checkUsage = (voucher: Voucher, customer: Customer | undefined): void => {
  const c = voucher.conditions;
  if (c.max_uses !== undefined && voucher.usageCount >= c.max_uses) {
    throw new DomainError('USAGE_LIMIT_EXCEEDED', `Voucher ${voucher.code} has reached its usage limit`, {
      max_uses: c.max_uses,
      current_uses: voucher.usageCount,
      limit_type: 'total_uses',
    });
  }
  if (c.customer_limit === undefined) return;
  if (customer?.id === undefined) {
    throw invalid('customer_required', `Voucher ${voucher.code} has a per-customer limit: customer.id is required`);
  }
  const uses = voucher.customerUses.get(customer.id) ?? 0;
  if (uses >= c.customer_limit) {
    throw new DomainError(
      'USAGE_LIMIT_EXCEEDED',
      `Customer ${customer.id} has reached the usage limit of ${voucher.code}`,
      {
        max_uses: c.customer_limit,
        current_uses: uses,
        limit_type: 'customer_uses',
      },
    );
  }
};

const minOrderValue = (voucher: Voucher, order: Order, min: number | undefined): void => {
  if (min !== undefined && order.value < min) {
    throw invalid('min_order_value', `Order value must be at least ${min}`, {
      min_required: min,
      current_value: order.value,
      currency: order.currency ?? voucher.currency ?? null,
    });
  }
};

const conditionsMet = (voucher: Voucher): string[] => {
  const c = voucher.conditions;
  const met = ['active'];
  if (c.valid_from !== undefined || c.valid_until !== undefined) met.push('valid_date_range');
  if (voucher.currency !== undefined) met.push('currency');
  if (c.min_order_value !== undefined) met.push('min_order_value');
  if (c.max_uses !== undefined) met.push('usage_limit');
  if (c.customer_limit !== undefined) met.push('customer_limit');
  if (c.product_ids !== undefined && c.product_ids.length > 0) met.push('product_ids');
  if (c.excluded_product_ids !== undefined && c.excluded_product_ids.length > 0) met.push('excluded_product_ids');
  return met;
};

/** What stacking needs to know of a voucher: its type, and for `stackable` its priority and rules. */
export const stackProfile = (voucher: Voucher): StackProfile => {
  if (voucher.type !== 'stackable')
    return { voucherId: voucher.id, code: voucher.code, type: voucher.type, priority: 0 };
  const parsed = parseConfig('stackable', voucher.config);
  const config = parsed.type === 'stackable' ? parsed.config : undefined;
  return {
    voucherId: voucher.id,
    code: voucher.code,
    type: 'stackable',
    priority: config?.priority ?? 0,
    stackRules: config?.stack_rules,
  };
};

type TypePriced = Priced & { details?: Record<string, unknown> };

/** Dispatch to the pure pricing module of the voucher's type. */
const price = (voucher: Voucher, order: Order, customer: Customer | undefined, stack: StackContext): TypePriced => {
  const c = voucher.conditions;
  const restriction: ProductRestriction = { productIds: c.product_ids, excludedProductIds: c.excluded_product_ids };
  if (!isAdvanced(voucher.type))
    return priceBasic(order, voucher.type as 'percentage' | 'fixed', voucher.value ?? 0, restriction);
  const parsed = parseConfig(voucher.type, voucher.config);
  const withFinal = (p: Omit<TypePriced, 'final_amount'>): TypePriced => ({
    ...p,
    final_amount: order.value - p.discount_amount,
  });
  switch (parsed.type) {
    case 'bogo': {
      minOrderValue(voucher, order, parsed.config.min_order_value);
      const r = new Set(restriction.productIds ?? []);
      const x = new Set(restriction.excludedProductIds ?? []);
      return withFinal(priceBogo(order, parsed.config, (id) => (r.size === 0 || r.has(id)) && !x.has(id)));
    }
    case 'tiered': {
      const currency = parsed.config.currency;
      if (currency !== undefined && order.currency !== undefined && order.currency !== currency) {
        throw invalid('currency_mismatch', `Voucher ${voucher.code} is for ${currency} orders`, {
          required_currency: currency,
          current_currency: order.currency,
        });
      }
      const tier = matchTier(order, parsed.config);
      const priced = priceBasic(order, tier.discount_type, tier.discount, restriction);
      return {
        ...priced,
        details: { order_value: order.value, applicable_tier: tier, discount_amount: priced.discount_amount },
      };
    }
    case 'conditional': {
      const details = checkConditional(parsed.config, order, customer);
      return {
        ...priceBasic(order, parsed.config.discount_type, parsed.config.discount, restriction),
        details: { ...details },
      };
    }
    case 'stackable':
      return withFinal(priceStackable(order, parsed.config, restriction, stack));
  }
};

/**
 * The single evaluation behind validate and apply: checks every condition in a fixed order
 * (status, expiry, start, currency, minimum, usage, customer limit, validation_rules, stacking
 * against the vouchers already on the order, then the type's own checks and products) and prices
 * the order with the type's pricing module. Throws the DomainError of the first failure.
 */
export const evaluate = (
  voucher: Voucher,
  order: Order,
  customer: Customer | undefined,
  now: Date,
  orderVouchers: OrderVoucher[] = [],
): Evaluation => {
  checkOrder(order);
  checkAvailability(voucher, order, now);
  checkUsage(voucher, customer);
  const rulesMet = checkRules(voucher.validationRules, order, customer);
  const stack = stackContext(orderVouchers, stackProfile(voucher), order.value);
  const c = voucher.conditions;
  const priced = price(voucher, order, customer, stack);
  const restricted = (c.product_ids?.length ?? 0) > 0 || (c.excluded_product_ids?.length ?? 0) > 0;
  if (restricted && priced.applied_to.length === 0) {
    throw invalid('no_eligible_items', `No item of the order is eligible for voucher ${voucher.code}`, {
      product_ids: c.product_ids ?? [],
      excluded_product_ids: c.excluded_product_ids ?? [],
    });
  }
  const details: ValidationDetails = {
    min_order_value_met: true,
    usage_limit_not_exceeded: true,
    valid_date_range: true,
  };
  if (customer !== undefined) details.customer_eligible = true;
  Object.assign(details, priced.details);
  const met = conditionsMet(voucher);
  if (rulesMet.length > 0) met.push('validation_rules');
  if (stack.position > 1) met.push('stacking');
  return {
    is_valid: true,
    voucher: { id: voucher.id, code: voucher.code, type: voucher.type, value: voucher.value ?? null },
    discount_amount: priced.discount_amount,
    // what the order comes to with this voucher and those already on it (decisions.md, Stacking)
    final_amount: priced.final_amount - stack.priorDiscount,
    currency: order.currency ?? voucher.currency ?? null,
    validation_details: details,
    applied_to: priced.applied_to,
    conditions_met: met,
  };
};
