import type { OrderVoucher } from '../discount/stacking.ts';
import type { OrderEvent, OrderVoucherProfile } from './events.ts';

export interface OrderEntry extends OrderVoucher {
  /** When the application was recorded on the order. */
  attachedAt: string;
}

export interface Order {
  orderId: string;
  /** Vouchers on the order, in attachment order. Arrays are replaced, never changed in place. */
  vouchers: OrderEntry[];
}

export type OrderState = Order | null;

export const initialOrderState = (): OrderState => null;

const entry = (d: OrderVoucherProfile & { applicationId: string; discountAmount: number }, at: string): OrderEntry => ({
  voucherId: d.voucherId,
  code: d.code,
  type: d.voucherType,
  priority: d.priority,
  ...(d.stackRules ? { stackRules: d.stackRules } : {}),
  orderValue: d.orderValue,
  applicationId: d.applicationId,
  discountAmount: d.discountAmount,
  attachedAt: at,
});

export const evolveOrder = (state: OrderState, event: OrderEvent): OrderState => {
  const current = state ?? { orderId: event.data.orderId, vouchers: [] };
  const d = event.data;
  switch (event.type) {
    case 'OrderVoucherConfirmed':
      return {
        ...current,
        vouchers: [
          ...current.vouchers.filter((v) => v.voucherId !== d.voucherId),
          entry(event.data, event.data.confirmedAt),
        ],
      };
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

/** The vouchers the order carries, in the order they were recorded. */
export const liveVouchers = (state: OrderState): OrderEntry[] => state?.vouchers ?? [];
