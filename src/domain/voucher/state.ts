import { Map as PersistentMap, Set as PersistentSet } from 'immutable';
import type {
  Conditions,
  RecordedStatus,
  VoucherApplicationRolledBack,
  VoucherApplied,
  VoucherStreamEvent,
  VoucherType,
} from './events.ts';
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
   * Applications by id, the live (not rolled back) one per order id, and live uses per customer.
   * Persistent maps: `evolve` returns new ones that share structure with the old (an apply costs
   * O(log n), not a copy), and every earlier state stays valid and unchanged.
   */
  applications: PersistentMap<string, Application>;
  liveByOrder: PersistentMap<string, string>;
  customerUses: PersistentMap<string, number>;
  /**
   * Application ids whose order reservation was voided (VoucherReservationVoided): an apply with
   * one of them is refused. Absent while there is none; only orphaned reservations add to it.
   */
  voided?: PersistentSet<string>;
  /**
   * Set when the state came from a snapshot (snapshot.ts): the maps above and `voided` then hold
   * only the keys loaded or changed since, and the command handler loads every key a command or
   * an event touches before deciding or folding. Absent: the state was folded from the stream's
   * start and the maps are complete.
   */
  partial?: true;
}

export type VoucherState = Voucher | null;

export const initialState = (): VoucherState => null;

export const evolve = (state: VoucherState, event: VoucherStreamEvent): VoucherState => {
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
        applications: PersistentMap(),
        liveByOrder: PersistentMap(),
        customerUses: PersistentMap(),
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
      const application = applicationOf(event, state);
      return {
        ...state,
        usageCount: state.usageCount + 1,
        applications: state.applications.set(d.applicationId, application),
        liveByOrder: state.liveByOrder.set(d.orderId, d.applicationId),
        customerUses:
          d.customerId === undefined
            ? state.customerUses
            : state.customerUses.set(d.customerId, (state.customerUses.get(d.customerId) ?? 0) + 1),
      };
    }
    case 'VoucherApplicationRolledBack': {
      if (!state) return state;
      const d = event.data;
      const application = state.applications.get(d.applicationId);
      if (!application && state.partial) {
        throw new Error(`application ${d.applicationId} was not loaded before its rollback was folded`);
      }
      if (!application || application.status === 'rolled_back') return state;
      const uses = d.customerId === undefined ? 0 : (state.customerUses.get(d.customerId) ?? 1) - 1;
      return {
        ...state,
        usageCount: Math.max(0, state.usageCount - 1),
        applications: state.applications.set(d.applicationId, rolledBack(application)),
        liveByOrder:
          state.liveByOrder.get(d.orderId) === d.applicationId
            ? state.liveByOrder.delete(d.orderId)
            : state.liveByOrder,
        customerUses:
          d.customerId === undefined
            ? state.customerUses
            : uses > 0
              ? state.customerUses.set(d.customerId, uses)
              : state.customerUses.delete(d.customerId),
      };
    }
    case 'VoucherExpired':
      if (!state) return state;
      return { ...state, status: 'expired' };
    case 'VoucherReservationVoided':
      if (!state) return state;
      return { ...state, voided: (state.voided ?? PersistentSet<string>()).add(event.data.applicationId) };
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
};

/**
 * `evolve` for readers that need the voucher's core only (its terms, status and usage count as of
 * an event) and never its applications: the keyed maps stay empty whatever the history's length.
 * A rollback is only ever recorded for a live application, so it takes one use off.
 */
export const evolveCore = (state: VoucherState, event: VoucherStreamEvent): VoucherState => {
  switch (event.type) {
    case 'VoucherApplied':
      return state && { ...state, usageCount: state.usageCount + 1 };
    case 'VoucherApplicationRolledBack':
      return state && { ...state, usageCount: Math.max(0, state.usageCount - 1) };
    case 'VoucherReservationVoided':
      return state;
    default:
      return evolve(state, event);
  }
};

/**
 * What an event does to the core when the usage count is all it changes (see evolveCore): +1 for
 * an application, −1 for a rollback, 0 for a voided reservation; null for any other event, which
 * may change the voucher's terms or status. A reader holding the core at a later revision has the
 * core at an earlier one by taking these back, when none of the events between is null.
 */
export const usageDelta = (event: VoucherStreamEvent): number | null => {
  switch (event.type) {
    case 'VoucherApplied':
      return 1;
    case 'VoucherApplicationRolledBack':
      return -1;
    case 'VoucherReservationVoided':
      return 0;
    default:
      return null;
  }
};

/** The application an event records, as it stands after the event (status included). */
export const applicationOf = (
  event: VoucherApplied | VoucherApplicationRolledBack,
  voucher: Pick<Voucher, 'currency'>,
): Application => {
  const d = event.data;
  const applied = event.type === 'VoucherApplied';
  const currency = applied || d.currency !== undefined ? d.currency! : (voucher.currency ?? null);
  // One object literal with every field: every application shares one V8 hidden class. A spread
  // copy (`{ ...recorded, status }`) gets a hidden class of its own, about 400 bytes more for each
  // application a voucher holds (decision 064).
  return {
    id: d.applicationId,
    orderId: d.orderId,
    customerId: d.customerId,
    discountAmount: d.discountAmount,
    finalAmount: d.finalAmount,
    orderValue: d.orderValue,
    currency,
    appliedAt: d.appliedAt,
    orderFingerprint: event.type === 'VoucherApplied' ? event.data.orderFingerprint : '',
    customerFingerprint: event.type === 'VoucherApplied' ? event.data.customerFingerprint : '',
    status: applied ? 'applied' : 'rolled_back',
  };
};

/** The application rolled back: a copy built field by field (see applicationOf). */
const rolledBack = (a: Application): Application => ({
  id: a.id,
  orderId: a.orderId,
  customerId: a.customerId,
  discountAmount: a.discountAmount,
  finalAmount: a.finalAmount,
  orderValue: a.orderValue,
  currency: a.currency,
  appliedAt: a.appliedAt,
  orderFingerprint: a.orderFingerprint,
  customerFingerprint: a.customerFingerprint,
  status: 'rolled_back',
});

/** The status a reader sees: an active voucher whose `valid_until` has passed reads `expired` at once. */
export const effectiveStatus = (voucher: Pick<Voucher, 'status' | 'conditions'>, now: Date): RecordedStatus => {
  if (voucher.status !== 'active') return voucher.status;
  const until = voucher.conditions.valid_until;
  return until !== undefined && Date.parse(until) <= now.getTime() ? 'expired' : 'active';
};
