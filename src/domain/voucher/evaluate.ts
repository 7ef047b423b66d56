import { DomainError, invalidRequest } from '../errors.ts';
import { isoSeconds } from '../clock.ts';
import { priceBasic } from '../discount/basic.ts';
import type { AppliedLine, Customer, Order } from '../discount/types.ts';
import { effectiveStatus, type Voucher } from './state.ts';

export interface ValidationDetails {
  min_order_value_met: boolean;
  usage_limit_not_exceeded: boolean;
  valid_date_range: boolean;
  customer_eligible?: boolean;
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
  if (!Number.isSafeInteger(lines)) throw invalidRequest([{ field: 'order.items', message: 'line totals are too large' }]);
  if (lines > order.value) {
    throw invalidRequest([{ field: 'order.items', message: `line totals (${lines}) exceed order.value (${order.value})` }]);
  }
};

const checkAvailability = (voucher: Voucher, order: Order, now: Date): void => {
  const c = voucher.conditions;
  if (voucher.status === 'inactive') throw invalid('inactive', `Voucher ${voucher.code} is inactive`);
  if (effectiveStatus(voucher, now) === 'expired') {
    throw new DomainError('VOUCHER_EXPIRED', `Voucher ${voucher.code} has expired`, {
      expired_at: c.valid_until ?? null, current_time: isoSeconds(now),
    });
  }
  if (c.valid_from !== undefined && Date.parse(c.valid_from) > now.getTime()) {
    throw invalid('not_yet_valid', `Voucher ${voucher.code} is not valid before ${c.valid_from}`, {
      valid_from: c.valid_from, current_time: isoSeconds(now),
    });
  }
  if (voucher.currency !== undefined && order.currency !== undefined && order.currency !== voucher.currency) {
    throw invalid('currency_mismatch', `Voucher ${voucher.code} is for ${voucher.currency} orders`, {
      required_currency: voucher.currency, current_currency: order.currency,
    });
  }
  if (c.min_order_value !== undefined && order.value < c.min_order_value) {
    throw invalid('min_order_value', `Order value must be at least ${c.min_order_value}`, {
      min_required: c.min_order_value, current_value: order.value, currency: order.currency ?? voucher.currency ?? null,
    });
  }
};

const checkUsage = (voucher: Voucher, customer: Customer | undefined): void => {
  const c = voucher.conditions;
  if (c.max_uses !== undefined && voucher.usageCount >= c.max_uses) {
    throw new DomainError('USAGE_LIMIT_EXCEEDED', `Voucher ${voucher.code} has reached its usage limit`, {
      max_uses: c.max_uses, current_uses: voucher.usageCount, limit_type: 'total_uses',
    });
  }
  if (c.customer_limit === undefined) return;
  if (customer?.id === undefined) {
    throw invalid('customer_required', `Voucher ${voucher.code} has a per-customer limit: customer.id is required`);
  }
  const uses = voucher.customerUses.get(customer.id) ?? 0;
  if (uses >= c.customer_limit) {
    throw new DomainError('USAGE_LIMIT_EXCEEDED', `Customer ${customer.id} has reached the usage limit of ${voucher.code}`, {
      max_uses: c.customer_limit, current_uses: uses, limit_type: 'customer_uses',
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

/**
 * The single evaluation behind validate and apply: checks every condition in a fixed order
 * (status, expiry, start, currency, minimum, usage, customer limit, products) and prices the
 * order. Throws the DomainError of the first condition that fails.
 */
export const evaluate = (voucher: Voucher, order: Order, customer: Customer | undefined, now: Date): Evaluation => {
  checkOrder(order);
  checkAvailability(voucher, order, now);
  checkUsage(voucher, customer);
  if (voucher.type !== 'percentage' && voucher.type !== 'fixed') {
    throw invalid('unsupported_type', `Vouchers of type ${voucher.type} cannot be evaluated yet`);
  }
  const c = voucher.conditions;
  const priced = priceBasic(order, voucher.type, voucher.value ?? 0, {
    productIds: c.product_ids, excludedProductIds: c.excluded_product_ids,
  });
  const restricted = (c.product_ids?.length ?? 0) > 0 || (c.excluded_product_ids?.length ?? 0) > 0;
  if (restricted && priced.applied_to.length === 0) {
    throw invalid('no_eligible_items', `No item of the order is eligible for voucher ${voucher.code}`, {
      product_ids: c.product_ids ?? [], excluded_product_ids: c.excluded_product_ids ?? [],
    });
  }
  const details: ValidationDetails = { min_order_value_met: true, usage_limit_not_exceeded: true, valid_date_range: true };
  if (customer !== undefined) details.customer_eligible = true;
  return {
    is_valid: true,
    voucher: { id: voucher.id, code: voucher.code, type: voucher.type, value: voucher.value ?? null },
    discount_amount: priced.discount_amount,
    final_amount: priced.final_amount,
    currency: order.currency ?? voucher.currency ?? null,
    validation_details: details,
    applied_to: priced.applied_to,
    conditions_met: conditionsMet(voucher),
  };
};
