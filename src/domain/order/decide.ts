import { isoSeconds } from '../clock.ts';
import { DomainError } from '../errors.ts';
import { stackContext, type StackProfile } from '../discount/stacking.ts';
import type { OrderEvent, OrderVoucherConfirmed, OrderVoucherDetached, OrderVoucherProfile } from './events.ts';
import { evolveOrder, initialOrderState, liveVouchers, reservationsOf, type OrderState } from './state.ts';
import type { Decider } from '../../core/decider.ts';

interface Metadata {
  now: Date;
}

export type OrderCommand =
  | {
      type: 'DetachVoucher';
      data: {
        orderId: string;
        voucherId: string;
        applicationId: string;
        reason: OrderVoucherDetached['data']['reason'];
      };
      metadata: Metadata;
    }
  | {
      type: 'ReserveApplication';
      data: { orderId: string; applicationId: string; voucher: StackProfile; orderValue: number };
      metadata: Metadata;
    }
  | {
      /** Settles the reservation `applicationId`: the voucher recorded it with this discount. */
      type: 'ConfirmApplication';
      data: { orderId: string; applicationId: string; discountAmount: number };
      metadata: Metadata;
    }
  | {
      type: 'RecordApplication';
      data: {
        orderId: string;
        applicationId: string;
        voucher: StackProfile;
        orderValue: number;
        discountAmount: number;
      };
      metadata: Metadata;
    };

type Command<T extends OrderCommand['type']> = Extract<OrderCommand, { type: T }>;

const profile = (v: StackProfile, orderValue: number): OrderVoucherProfile => ({
  voucherId: v.voucherId,
  code: v.code,
  voucherType: v.type,
  priority: v.priority,
  ...(v.stackRules ? { stackRules: v.stackRules } : {}),
  orderValue,
});

/**
 * The order's confirmation of an application; the same voucher still live on the order (its
 * rollback's detach was lost) is detached first as superseded.
 */
const confirmed = (
  live: ReadonlyArray<{ voucherId: string; applicationId: string }>,
  data: OrderVoucherConfirmed['data'],
): OrderEvent[] => {
  const same = live.find((v) => v.voucherId === data.voucherId);
  const superseded: OrderEvent[] = same
    ? [
        {
          type: 'OrderVoucherDetached',
          data: {
            orderId: data.orderId,
            voucherId: same.voucherId,
            applicationId: same.applicationId,
            reason: 'superseded',
            detachedAt: data.confirmedAt,
          },
        },
      ]
    : [];
  return [...superseded, { type: 'OrderVoucherConfirmed', data }];
};

/**
 * Record: the voucher's application, written in the same atomic append as its VoucherApplied
 * (both are written or neither). The stacking rules apply; the same voucher already on the order
 * (its rollback's detach was lost) is superseded.
 */
const record = ({ data, metadata }: Command<'RecordApplication'>, state: OrderState): OrderEvent[] => {
  const live = liveVouchers(state);
  stackContext(live, data.voucher, data.orderValue);
  return confirmed(live, {
    ...profile(data.voucher, data.orderValue),
    orderId: data.orderId,
    applicationId: data.applicationId,
    discountAmount: data.discountAmount,
    confirmedAt: isoSeconds(metadata.now),
  });
};

/**
 * Reserve: the order's place for an application the voucher has yet to decide. Refused while
 * another reservation is unsettled (the caller settles it first: CONCURRENT_MODIFICATION only
 * when the order's state moved under it), and by the stacking rules, as a record would be.
 */
const reserve = ({ data, metadata }: Command<'ReserveApplication'>, state: OrderState): OrderEvent[] => {
  if (reservationsOf(state).length > 0) {
    throw new DomainError(
      'CONCURRENT_MODIFICATION',
      'Another voucher is being applied to this order; retry the request',
      {},
    );
  }
  stackContext(liveVouchers(state), data.voucher, data.orderValue);
  return [
    {
      type: 'OrderVoucherReserved',
      data: {
        ...profile(data.voucher, data.orderValue),
        orderId: data.orderId,
        applicationId: data.applicationId,
        reservedAt: isoSeconds(metadata.now),
      },
    },
  ];
};

/**
 * Confirm (idempotent): the reservation becomes the voucher's entry on the order, superseding an
 * entry of the same voucher whose rollback detach was lost. Nothing when the reservation is gone
 * (already confirmed, or detached by a rollback).
 */
const confirm = ({ data, metadata }: Command<'ConfirmApplication'>, state: OrderState): OrderEvent[] => {
  const reserved = reservationsOf(state).find((r) => r.applicationId === data.applicationId);
  if (!reserved) return [];
  return confirmed(liveVouchers(state), {
    ...profile(reserved, reserved.orderValue),
    orderId: data.orderId,
    applicationId: data.applicationId,
    discountAmount: data.discountAmount,
    confirmedAt: isoSeconds(metadata.now),
  });
};

/** Detach only the named application or reservation (another request's attachment of the voucher stays). */
const detach = ({ data, metadata }: Command<'DetachVoucher'>, state: OrderState): OrderEvent[] => {
  const named = (v: { voucherId: string; applicationId: string }) =>
    v.voucherId === data.voucherId && v.applicationId === data.applicationId;
  const found = liveVouchers(state).some(named) || reservationsOf(state).some(named);
  if (!found) return [];
  return [{ type: 'OrderVoucherDetached', data: { ...data, detachedAt: isoSeconds(metadata.now) } }];
};

export const decideOrder = (command: OrderCommand, state: OrderState): OrderEvent[] => {
  switch (command.type) {
    case 'DetachVoucher':
      return detach(command, state);
    case 'RecordApplication':
      return record(command, state);
    case 'ReserveApplication':
      return reserve(command, state);
    case 'ConfirmApplication':
      return confirm(command, state);
    default: {
      const unknown: never = command;
      throw new Error(`unknown command ${JSON.stringify(unknown)}`);
    }
  }
};

/** The order aggregate as one decider (core/decider.ts). */
export const orderDecider: Decider<OrderCommand, OrderEvent, OrderState> = {
  decide: decideOrder,
  evolve: evolveOrder,
  initialState: initialOrderState,
};
