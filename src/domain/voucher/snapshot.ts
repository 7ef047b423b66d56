import { Map as PersistentMap, Set as PersistentSet } from 'immutable';
import type { SnapshotCodec } from '../../core/snapshotStore.ts';
import type { VoucherCommand } from './commands.ts';
import type { VoucherStreamEvent } from './events.ts';
import type { Application, Voucher, VoucherState } from './state.ts';

/**
 * The voucher as a bounded core plus keyed entries (core/snapshotStore.ts): what grows with its
 * applications and customers is kept by key and loaded only for the keys a command or an event
 * touches.
 * - `a:<applicationId>`: the application (or `{ "voided": true }` for a voided reservation);
 * - `o:<orderId>`: the id of the order's live application (null: none);
 * - `c:<customerId>`: the customer's live uses (0: none).
 */
export const applicationKey = (applicationId: string): string => `a:${applicationId}`;
export const orderKey = (orderId: string): string => `o:${orderId}`;
export const customerKey = (customerId: string): string => `c:${customerId}`;

/** The keys that tell whether the order carries the voucher: the order's entry, then its live application. */
export const orderKeys = (orderId: string, state: VoucherState): string[] => {
  const live = state?.liveByOrder.get(orderId);
  return live === undefined ? [orderKey(orderId)] : [orderKey(orderId), applicationKey(live)];
};

/**
 * The keys a command reads (and the events it decides change) on a partial state; called again
 * with the state once they are loaded, until it names nothing new (a rollback names its
 * application first, then that application's order and customer).
 */
export const commandKeys = (command: VoucherCommand, state: VoucherState): string[] => {
  switch (command.type) {
    case 'ApplyVoucher': {
      const { orderId, applicationId, customer } = command.data;
      const keys = [...orderKeys(orderId, state), applicationKey(applicationId)];
      if (customer?.id !== undefined) keys.push(customerKey(customer.id));
      return keys;
    }
    case 'RollbackApplication': {
      const application = state?.applications.get(command.data.applicationId);
      return application
        ? applicationKeys(application.id, application.orderId, application.customerId)
        : [applicationKey(command.data.applicationId)];
    }
    case 'VoidReservation':
      return [applicationKey(command.data.applicationId)];
    default:
      return [];
  }
};

/** The keys of an application: its own, its order's and its customer's. */
const applicationKeys = (applicationId: string, orderId: string, customerId: string | undefined): string[] =>
  customerId === undefined
    ? [applicationKey(applicationId), orderKey(orderId)]
    : [applicationKey(applicationId), orderKey(orderId), customerKey(customerId)];

const eventKeys = (event: VoucherStreamEvent): readonly string[] => {
  switch (event.type) {
    case 'VoucherApplied':
    case 'VoucherApplicationRolledBack':
      return applicationKeys(event.data.applicationId, event.data.orderId, event.data.customerId);
    case 'VoucherReservationVoided':
      return [applicationKey(event.data.applicationId)];
    default:
      return [];
  }
};

type Core = Omit<Voucher, 'applications' | 'liveByOrder' | 'customerUses' | 'voided' | 'partial'>;

const withoutEntries = (state: VoucherState): VoucherState =>
  state && {
    ...state,
    applications: PersistentMap(),
    liveByOrder: PersistentMap(),
    customerUses: PersistentMap(),
    voided: undefined,
    partial: true,
  };

const VOIDED = { voided: true } as const;

export const voucherSnapshots: SnapshotCodec<VoucherStreamEvent, VoucherState> = {
  eventKeys,
  core: (state) => {
    if (!state) return null;
    const core: Record<string, unknown> = { ...state };
    for (const keyed of ['applications', 'liveByOrder', 'customerUses', 'voided', 'partial']) delete core[keyed];
    return core as Core;
  },
  fromCore: (core) => withoutEntries(core === null ? null : ({ ...(core as Core) } as Voucher)),
  entries: (state, keys) => {
    const entries: Array<[string, unknown]> = [];
    for (const key of keys) {
      const id = key.slice(2);
      if (key.startsWith('a:'))
        entries.push([key, state?.applications.get(id) ?? (state?.voided?.has(id) ? VOIDED : null)]);
      else if (key.startsWith('o:')) entries.push([key, state?.liveByOrder.get(id) ?? null]);
      else if (key.startsWith('c:')) entries.push([key, state?.customerUses.get(id) ?? 0]);
    }
    return entries;
  },
  withEntries: (state, entries) => {
    if (!state) return state;
    let { applications, liveByOrder, customerUses, voided } = state;
    for (const [key, value] of entries) {
      const id = key.slice(2);
      if (value === null || value === 0) continue;
      if (key.startsWith('a:')) {
        if ((value as { voided?: boolean }).voided === true) voided = (voided ?? PersistentSet<string>()).add(id);
        else applications = applications.set(id, value as Application);
      } else if (key.startsWith('o:')) liveByOrder = liveByOrder.set(id, value as string);
      else if (key.startsWith('c:')) customerUses = customerUses.set(id, value as number);
    }
    return { ...state, applications, liveByOrder, customerUses, ...(voided ? { voided } : {}) };
  },
  withoutEntries,
};
