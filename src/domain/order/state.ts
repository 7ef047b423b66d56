import type { OrderVoucher } from '../discount/stacking.ts';
import type { OrderEvent, OrderVoucherProfile } from './events.ts';

/**
 * A pending attachment older than this without confirmation no longer blocks the order: its
 * process stopped between the two writes. The apply path first settles such attachments by
 * asking the voucher stream (confirm when its VoucherApplied exists, else detach), so the decider
 * ignoring them is only the last line of defence.
 */
export const PENDING_TTL_MS = 2 * 60 * 1000;

export interface OrderEntry extends OrderVoucher {
  status: 'pending' | 'confirmed';
  attachedAt: string;
}

export interface Order {
  orderId: string;
  /** Vouchers on the order, in attachment order. Arrays are replaced, never changed in place. */
  vouchers: OrderEntry[];
}

export type OrderState = Order | null;

export const initialOrderState = (): OrderState => null;

const entry = (
  d: OrderVoucherProfile & { applicationId: string },
  status: OrderEntry['status'],
  discountAmount: number | null,
  at: string,
): OrderEntry => ({
  voucherId: d.voucherId,
  code: d.code,
  type: d.voucherType,
  priority: d.priority,
  ...(d.stackRules ? { stackRules: d.stackRules } : {}),
  orderValue: d.orderValue,
  applicationId: d.applicationId,
  discountAmount,
  status,
  attachedAt: at,
});

export const evolveOrder = (state: OrderState, event: OrderEvent): OrderState => {
  const current = state ?? { orderId: event.data.orderId, vouchers: [] };
  const d = event.data;
  switch (event.type) {
    case 'OrderVoucherAttached':
      return {
        ...current,
        vouchers: [
          ...current.vouchers.filter((v) => v.voucherId !== d.voucherId),
          entry(event.data, 'pending', null, event.data.attachedAt),
        ],
      };
    case 'OrderVoucherConfirmed': {
      const data = event.data;
      const found = current.vouchers.find((v) => v.voucherId === data.voucherId);
      const confirmed = entry(data, 'confirmed', data.discountAmount, found?.attachedAt ?? data.confirmedAt);
      return {
        ...current,
        vouchers: found ? current.vouchers.map((v) => (v === found ? confirmed : v)) : [...current.vouchers, confirmed],
      };
    }
    case 'OrderVoucherDetached':
      return {
        ...current,
        vouchers: current.vouchers.filter((v) => !(v.voucherId === d.voucherId && v.applicationId === d.applicationId)),
      };
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
};

export const isStale = (v: OrderEntry, now: Date): boolean =>
  v.status === 'pending' && now.getTime() - Date.parse(v.attachedAt) > PENDING_TTL_MS;

/** The vouchers that count on the order at `now`: confirmed ones and pending ones not yet stale. */
export const liveVouchers = (state: OrderState, now: Date): OrderEntry[] =>
  (state?.vouchers ?? []).filter((v) => !isStale(v, now));
