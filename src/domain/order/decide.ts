import { isoSeconds } from '../clock.ts';
import { stackContext, type StackProfile } from '../discount/stacking.ts';
import type { OrderEvent, OrderVoucherDetached, OrderVoucherProfile } from './events.ts';
import { evolveOrder, initialOrderState, liveVouchers, type OrderState } from './state.ts';
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
 * Record: the voucher's application, written in the same atomic append as its VoucherApplied
 * (both are written or neither). The stacking rules apply; the same voucher already on the order
 * (its rollback's detach was lost) is superseded.
 */
const record = ({ data, metadata }: Command<'RecordApplication'>, state: OrderState): OrderEvent[] => {
  const live = liveVouchers(state);
  stackContext(live, data.voucher, data.orderValue);
  const at = isoSeconds(metadata.now);
  const same = live.find((v) => v.voucherId === data.voucher.voucherId);
  const events: OrderEvent[] = [];
  if (same) {
    events.push({
      type: 'OrderVoucherDetached',
      data: {
        orderId: data.orderId,
        voucherId: same.voucherId,
        applicationId: same.applicationId,
        reason: 'superseded',
        detachedAt: at,
      },
    });
  }
  events.push({
    type: 'OrderVoucherConfirmed',
    data: {
      ...profile(data.voucher, data.orderValue),
      orderId: data.orderId,
      applicationId: data.applicationId,
      discountAmount: data.discountAmount,
      confirmedAt: at,
    },
  });
  return events;
};

/** Detach only the named application (another request's attachment of the voucher stays). */
const detach = ({ data, metadata }: Command<'DetachVoucher'>, state: OrderState): OrderEvent[] => {
  const found = state?.vouchers.some((v) => v.voucherId === data.voucherId && v.applicationId === data.applicationId);
  if (!found) return [];
  return [{ type: 'OrderVoucherDetached', data: { ...data, detachedAt: isoSeconds(metadata.now) } }];
};

export const decideOrder = (command: OrderCommand, state: OrderState): OrderEvent[] => {
  switch (command.type) {
    case 'DetachVoucher':
      return detach(command, state);
    case 'RecordApplication':
      return record(command, state);
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
