import type { Conditions, RecordedStatus, VoucherEvent, VoucherType } from './events.ts';
import type { ValidationRule } from '../discount/rules.ts';

export interface Application {
  id: string;
  orderId: string;
  customerId?: string;
  discountAmount: number;
  finalAmount: number;
  orderValue: number;
  currency: string | null;
  appliedAt: string;
  orderFingerprint: string;
  customerFingerprint: string;
  status: 'applied' | 'rolled_back';
}

export interface Voucher {
  id: string;
  code: string;
  type: VoucherType;
  value?: number;
  currency?: string;
  config?: Record<string, unknown>;
  conditions: Conditions;
  validationRules?: ValidationRule[];
  /** Status as recorded by events; `effectiveStatus` adds expiry by the clock. */
  status: RecordedStatus;
  usageCount: number;
  createdAt: string;
  updatedAt: string;
  deactivatedAt?: string;
  /**
   * Applications by id, and the live (not rolled back) one per order id, and live uses per
   * customer. For O(1) applies on vouchers with very many applications these collections are
   * shared between successive states and updated in place by `evolve`: a state must not be used
   * again after it has been evolved (the command handler drops its cached state whenever an
   * append fails, and reloads it from the stream).
   */
  applications: Map<string, Application>;
  liveByOrder: Map<string, string>;
  customerUses: Map<string, number>;
}

export type VoucherState = Voucher | null;

export const initialState = (): VoucherState => null;

export const evolve = (state: VoucherState, event: VoucherEvent): VoucherState => {
  switch (event.type) {
    case 'VoucherCreated': {
      const d = event.data;
      return {
        id: d.voucherId,
        code: d.code,
        type: d.voucherType,
        value: d.value,
        currency: d.currency,
        config: d.config,
        conditions: d.conditions,
        validationRules: d.validationRules,
        status: 'active',
        usageCount: 0,
        createdAt: d.createdAt,
        updatedAt: d.createdAt,
        applications: new Map(),
        liveByOrder: new Map(),
        customerUses: new Map(),
      };
    }
    case 'VoucherUpdated': {
      if (!state) return state;
      const d = event.data;
      const currency = d.currency === null ? undefined : (d.currency ?? state.currency);
      return {
        ...state,
        value: d.value ?? state.value,
        currency,
        conditions: d.conditions ?? state.conditions,
        config: d.config ?? state.config,
        validationRules: d.validationRules === null ? undefined : (d.validationRules ?? state.validationRules),
        status: d.status,
        updatedAt: d.updatedAt,
        deactivatedAt: d.status === 'inactive' ? state.deactivatedAt : undefined,
      };
    }
    case 'VoucherDeactivated':
      if (!state) return state;
      return {
        ...state,
        status: 'inactive',
        deactivatedAt: event.data.deactivatedAt,
        updatedAt: event.data.deactivatedAt,
      };
    case 'VoucherApplied': {
      if (!state) return state;
      const d = event.data;
      state.applications.set(d.applicationId, {
        id: d.applicationId,
        orderId: d.orderId,
        customerId: d.customerId,
        discountAmount: d.discountAmount,
        finalAmount: d.finalAmount,
        orderValue: d.orderValue,
        currency: d.currency,
        appliedAt: d.appliedAt,
        orderFingerprint: d.orderFingerprint,
        customerFingerprint: d.customerFingerprint,
        status: 'applied',
      });
      state.liveByOrder.set(d.orderId, d.applicationId);
      if (d.customerId !== undefined)
        state.customerUses.set(d.customerId, (state.customerUses.get(d.customerId) ?? 0) + 1);
      return { ...state, usageCount: state.usageCount + 1 };
    }
    case 'VoucherApplicationRolledBack': {
      if (!state) return state;
      const d = event.data;
      const application = state.applications.get(d.applicationId);
      if (!application || application.status === 'rolled_back') return state;
      state.applications.set(d.applicationId, { ...application, status: 'rolled_back' });
      if (state.liveByOrder.get(d.orderId) === d.applicationId) state.liveByOrder.delete(d.orderId);
      if (d.customerId !== undefined) {
        const uses = (state.customerUses.get(d.customerId) ?? 1) - 1;
        if (uses > 0) state.customerUses.set(d.customerId, uses);
        else state.customerUses.delete(d.customerId);
      }
      return { ...state, usageCount: Math.max(0, state.usageCount - 1) };
    }
    case 'VoucherExpired':
      if (!state) return state;
      return { ...state, status: 'expired' };
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
};

/** The status a reader sees: an active voucher whose `valid_until` has passed reads `expired` at once. */
export const effectiveStatus = (voucher: Pick<Voucher, 'status' | 'conditions'>, now: Date): RecordedStatus => {
  if (voucher.status !== 'active') return voucher.status;
  const until = voucher.conditions.valid_until;
  return until !== undefined && Date.parse(until) <= now.getTime() ? 'expired' : 'active';
};
