import { DomainError, invalidRequest } from '../errors.ts';
import { isoSeconds } from '../clock.ts';
import { hasAtMostTwoDecimals } from '../discount/money.ts';
import { isAdvanced, parseConfig } from '../discount/configs.ts';
import { compileRules } from '../discount/rules.ts';
import type { VoucherCommand, ConditionsPatch } from './commands.ts';
import type {
  AppliedOrderSummary,
  Conditions,
  RecordedStatus,
  VoucherEvent,
  VoucherStreamEvent,
  VoucherType,
} from './events.ts';
import type { AppliedLine, Order } from '../discount/types.ts';
import { evaluate } from './evaluate.ts';
import { evolve, initialState, type Voucher, type VoucherState } from './state.ts';
import type { Decider } from '../../core/decider.ts';

type Command<T extends VoucherCommand['type']> = Extract<VoucherCommand, { type: T }>;

const notFound = (voucherId: string): DomainError =>
  new DomainError('VOUCHER_NOT_FOUND', `Voucher ${voucherId} was not found`, { voucher_id: voucherId });

const existing = (state: VoucherState, voucherId: string): Voucher => {
  if (!state) throw notFound(voucherId);
  return state;
};

type Problem = { field: string; message: string };

/** On create: whether `value` and `config` are present as the type needs (at most one problem each). */
const presenceProblems = (
  type: VoucherType,
  value: number | undefined,
  config: Record<string, unknown> | undefined,
): Problem[] => {
  const problems: Problem[] = [];
  if (isAdvanced(type)) {
    if (value !== undefined)
      problems.push({ field: 'value', message: `is not allowed for ${type} vouchers: their discount is in config` });
    if (config === undefined)
      problems.push({ field: 'config', message: `is required for ${type} vouchers: it holds their discount` });
  } else {
    if (value === undefined) problems.push({ field: 'value', message: `is required for ${type} vouchers` });
    if (config !== undefined)
      problems.push({
        field: 'config',
        message: `is not allowed for ${type} vouchers: only bogo, tiered, conditional and stackable take a config`,
      });
  }
  return problems;
};

/** Rules on `value` that depend on the type (the schema cannot see the type on update). */
export const checkValue = (type: VoucherType, value: number | undefined, field = 'value'): void => {
  if (type !== 'percentage' && type !== 'fixed') {
    if (value !== undefined)
      throw invalidRequest([{ field, message: `is not allowed for ${type} vouchers: their discount is in config` }]);
    return;
  }
  if (value === undefined) throw invalidRequest([{ field, message: `is required for ${type} vouchers` }]);
  if (type === 'percentage' && !(value >= 0 && value <= 100)) {
    throw invalidRequest([{ field, message: 'must be a percentage between 0 and 100' }]);
  }
  if (type === 'percentage' && !hasAtMostTwoDecimals(value)) {
    throw invalidRequest([{ field, message: 'must have at most 2 decimal places' }]);
  }
  if (type === 'fixed' && !(Number.isInteger(value) && value >= 1 && value <= 100_000_000)) {
    throw invalidRequest([{ field, message: 'must be an integer amount in cents between 1 and 100000000' }]);
  }
};

/**
 * `config`: required for (and only allowed with) the advanced types; its meaning is checked by
 * the type's parser (INVALID_CONFIGURATION). On update a config replaces the stored one whole.
 */
export const checkConfig = (
  type: VoucherType,
  config: Record<string, unknown> | undefined,
  creating: boolean,
): void => {
  if (!isAdvanced(type)) {
    if (config !== undefined)
      throw invalidRequest([
        {
          field: 'config',
          message: `is not allowed for ${type} vouchers: only bogo, tiered, conditional and stackable take a config`,
        },
      ]);
    return;
  }
  if (config === undefined) {
    if (creating)
      throw invalidRequest([{ field: 'config', message: `is required for ${type} vouchers: it holds their discount` }]);
    return;
  }
  parseConfig(type, config);
};

export const checkConditions = (c: Conditions): void => {
  if (
    c.valid_from !== undefined &&
    c.valid_until !== undefined &&
    Date.parse(c.valid_from) >= Date.parse(c.valid_until)
  ) {
    throw invalidRequest([{ field: 'conditions.valid_until', message: 'must be later than conditions.valid_from' }]);
  }
};

const mergeConditions = (stored: Conditions, patch: ConditionsPatch): Conditions => {
  const merged: Record<string, unknown> = { ...stored };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else if (value !== undefined) merged[key] = value;
  }
  return merged as Conditions;
};

const create = ({ data, metadata }: Command<'CreateVoucher'>, state: VoucherState): VoucherEvent[] => {
  if (state)
    throw new DomainError('DUPLICATE_VOUCHER_CODE', `Voucher ${data.voucherId} already exists`, {
      code: data.code,
      voucher_id: state.id,
    });
  // `value` and `config` the type does not take, or needs: every such problem at once
  const missingOrExtra = presenceProblems(data.voucherType, data.value, data.config);
  if (missingOrExtra.length > 0) throw invalidRequest(missingOrExtra);
  checkValue(data.voucherType, data.value);
  checkConfig(data.voucherType, data.config, true);
  if (data.validationRules !== undefined) compileRules(data.validationRules);
  const conditions = data.conditions ?? {};
  checkConditions(conditions);
  return [
    {
      type: 'VoucherCreated',
      data: {
        voucherId: data.voucherId,
        code: data.code,
        voucherType: data.voucherType,
        value: data.value,
        currency: data.currency,
        config: data.config,
        conditions,
        ...(data.validationRules !== undefined ? { validationRules: data.validationRules } : {}),
        createdAt: isoSeconds(metadata.now),
      },
    },
  ];
};

const update = ({ data, metadata }: Command<'UpdateVoucher'>, state: VoucherState): VoucherEvent[] => {
  const voucher = existing(state, data.voucherId);
  if (
    data.value === undefined &&
    data.currency === undefined &&
    data.conditions === undefined &&
    data.status === undefined &&
    data.config === undefined &&
    data.validationRules === undefined
  ) {
    return []; // nothing to change: no event, updated_at stays
  }
  if (data.value !== undefined) checkValue(voucher.type, data.value);
  if (data.config !== undefined) checkConfig(voucher.type, data.config, false);
  if (data.validationRules !== undefined && data.validationRules !== null) compileRules(data.validationRules);
  const conditions = data.conditions ? mergeConditions(voucher.conditions, data.conditions) : undefined;
  if (conditions) checkConditions(conditions);
  // An expired voucher becomes active again only when valid_until moves into the future (or is
  // removed); an explicit `inactive` always wins.
  const until = (conditions ?? voucher.conditions).valid_until;
  const revived = until === undefined || Date.parse(until) > metadata.now.getTime();
  if (data.status === 'active' && !revived) {
    throw invalidRequest([
      {
        field: 'status',
        message: 'cannot be active while conditions.valid_until has passed: move valid_until into the future',
      },
    ]);
  }
  let status: RecordedStatus = data.status ?? voucher.status;
  if (voucher.status === 'expired' && status !== 'inactive') status = revived ? 'active' : 'expired';
  return [
    {
      type: 'VoucherUpdated',
      data: {
        voucherId: voucher.id,
        value: data.value,
        currency: data.currency,
        conditions,
        status,
        ...(data.config !== undefined ? { config: data.config } : {}),
        ...(data.validationRules !== undefined ? { validationRules: data.validationRules } : {}),
        updatedAt: isoSeconds(metadata.now),
      },
    },
  ];
};

const deactivate = ({ data, metadata }: Command<'DeactivateVoucher'>, state: VoucherState): VoucherEvent[] => {
  const voucher = existing(state, data.voucherId);
  if (voucher.status === 'inactive' && voucher.deactivatedAt !== undefined) return [];
  return [{ type: 'VoucherDeactivated', data: { voucherId: voucher.id, deactivatedAt: isoSeconds(metadata.now) } }];
};

/**
 * Lines of `applied_to` a VoucherApplied keeps. Nothing reads the items back from the log (the
 * repeat check compares the order's fingerprint; read models take amounts), so an event stays a
 * few KB whatever the order's size: a 1,000-item order wrote about 500 KB per event before.
 */
export const APPLIED_LINES_KEPT = 20;

const summarise = (order: Order, appliedTo: AppliedLine[]): AppliedOrderSummary => {
  const items = order.items ?? [];
  return {
    itemCount: items.length,
    itemsValue: items.reduce((sum, item) => sum + item.price * item.quantity, 0),
    appliedLineCount: appliedTo.length,
    appliedLinesValue: appliedTo.reduce((sum, line) => sum + line.original_price, 0),
  };
};

const apply = ({ data, metadata }: Command<'ApplyVoucher'>, state: VoucherState): VoucherEvent[] => {
  const voucher = existing(state, data.voucherId);
  const previousId = voucher.liveByOrder.get(data.orderId);
  if (previousId !== undefined) {
    const previous = voucher.applications.get(previousId)!;
    const sameOrder =
      data.requestOrderFingerprint === undefined || data.requestOrderFingerprint === previous.orderFingerprint;
    const sameCustomer =
      data.requestCustomerFingerprint === undefined || data.requestCustomerFingerprint === previous.customerFingerprint;
    if (sameOrder && sameCustomer) return []; // idempotent repeat: the stored application stands
    throw new DomainError(
      'VOUCHER_ALREADY_APPLIED',
      `Voucher ${voucher.code} is already applied to order ${data.orderId}`,
      {
        order_id: data.orderId,
        voucher_id: voucher.id,
      },
    );
  }
  if (voucher.voided?.has(data.applicationId)) {
    // Its order reservation was given up as orphaned (a stall longer than the reservation's time).
    throw new DomainError(
      'CONCURRENT_MODIFICATION',
      'The order is being changed by another request; retry the request',
      {},
    );
  }
  if (data.order === undefined) {
    throw invalidRequest([
      {
        field: 'order',
        message: 'is required: send the order, or validate it with order.id first (quotes are kept 30 minutes)',
      },
    ]);
  }
  const result = evaluate(voucher, data.order, data.customer, metadata.now, data.orderVouchers);
  const customer = data.customer;
  return [
    {
      type: 'VoucherApplied',
      data: {
        voucherId: voucher.id,
        applicationId: data.applicationId,
        code: voucher.code,
        orderId: data.orderId,
        customerId: customer?.id,
        customerSegment: customer?.segment,
        customerRegion: customer?.region,
        orderValue: data.order.value,
        orderSummary: summarise(data.order, result.applied_to),
        discountAmount: result.discount_amount,
        finalAmount: result.final_amount,
        currency: result.currency,
        appliedTo: result.applied_to.slice(0, APPLIED_LINES_KEPT),
        orderFingerprint: data.orderFingerprint,
        customerFingerprint: data.customerFingerprint,
        appliedAt: isoSeconds(metadata.now),
      },
    },
  ];
};

const rollback = ({ data, metadata }: Command<'RollbackApplication'>, state: VoucherState): VoucherEvent[] => {
  const application = state?.applications.get(data.applicationId);
  if (!state || !application) {
    throw new DomainError('APPLICATION_NOT_FOUND', `Application ${data.applicationId} was not found`, {
      application_id: data.applicationId,
    });
  }
  if (application.status === 'rolled_back') return [];
  return [
    {
      type: 'VoucherApplicationRolledBack',
      data: {
        voucherId: state.id,
        applicationId: application.id,
        orderId: application.orderId,
        customerId: application.customerId,
        discountAmount: application.discountAmount,
        finalAmount: application.finalAmount,
        orderValue: application.orderValue,
        currency: application.currency,
        reason: data.reason,
        appliedAt: application.appliedAt,
        rolledBackAt: isoSeconds(metadata.now),
      },
    },
  ];
};

const expire = ({ data, metadata }: Command<'ExpireVoucher'>, state: VoucherState): VoucherEvent[] => {
  const voucher = existing(state, data.voucherId);
  const until = voucher.conditions.valid_until;
  if (voucher.status !== 'active' || until === undefined || Date.parse(until) > metadata.now.getTime()) return [];
  return [
    { type: 'VoucherExpired', data: { voucherId: voucher.id, validUntil: until, expiredAt: isoSeconds(metadata.now) } },
  ];
};

const voidReservation = ({ data, metadata }: Command<'VoidReservation'>, state: VoucherState): VoucherStreamEvent[] => {
  const voucher = existing(state, data.voucherId);
  if (voucher.applications.has(data.applicationId) || voucher.voided?.has(data.applicationId)) return [];
  return [
    {
      type: 'VoucherReservationVoided',
      data: {
        voucherId: voucher.id,
        applicationId: data.applicationId,
        orderId: data.orderId,
        voidedAt: isoSeconds(metadata.now),
      },
    },
  ];
};

export const decide = (command: VoucherCommand, state: VoucherState): VoucherStreamEvent[] => {
  switch (command.type) {
    case 'CreateVoucher':
      return create(command, state);
    case 'UpdateVoucher':
      return update(command, state);
    case 'DeactivateVoucher':
      return deactivate(command, state);
    case 'ApplyVoucher':
      return apply(command, state);
    case 'RollbackApplication':
      return rollback(command, state);
    case 'ExpireVoucher':
      return expire(command, state);
    case 'VoidReservation':
      return voidReservation(command, state);
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${JSON.stringify(unknown)}`);
    }
  }
};

/** The voucher aggregate as one decider (core/decider.ts). */
export const voucherDecider: Decider<VoucherCommand, VoucherStreamEvent, VoucherState> = {
  decide,
  evolve,
  initialState,
};
