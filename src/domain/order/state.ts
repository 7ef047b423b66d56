import type { OrderVoucher, StackProfile } from '../discount/stacking.ts';
import type { OrderEvent, OrderVoucherProfile } from './events.ts';

export interface OrderEntry extends OrderVoucher {
  /** When the application was recorded on the order. */
  attachedAt: string;
}

/** A voucher being applied to the order: its application is not known yet (OrderVoucherReserved). */
export interface Reservation extends StackProfile {
  applicationId: string;
  orderValue: number;
  reservedAt: string;
}

export interface Order {
  orderId: string;
  /** Vouchers on the order, in attachment order. Arrays are replaced, never changed in place. */
  vouchers: OrderEntry[];
  /** Reservations not yet settled (apply without an atomic two-stream append); absent while none ever was. */
  reservations?: Reservation[];
}

export type OrderState = Order | null;

export const initialOrderState = (): OrderState => null;

const profileOf = (d: OrderVoucherProfile): StackProfile & { orderValue: number } => ({
  voucherId: d.voucherId,
  code: d.code,
  type: d.voucherType,
  priority: d.priority,
  ...(d.stackRules ? { stackRules: d.stackRules } : {}),
  orderValue: d.orderValue,
});

const entry = (d: OrderVoucherProfile & { applicationId: string; discountAmount: number }, at: string): OrderEntry => ({
  ...profileOf(d),
  applicationId: d.applicationId,
  discountAmount: d.discountAmount,
  attachedAt: at,
});

const without = (reservations: Reservation[] | undefined, applicationId: string): Reservation[] | undefined =>
  reservations?.some((r) => r.applicationId === applicationId)
    ? reservations.filter((r) => r.applicationId !== applicationId)
    : reservations;

export const evolveOrder = (state: OrderState, event: OrderEvent): OrderState => {
  const current = state ?? { orderId: event.data.orderId, vouchers: [] };
  const d = event.data;
  switch (event.type) {
    case 'OrderVoucherReserved':
      return {
        ...current,
        reservations: [
          ...(without(current.reservations, event.data.applicationId) ?? []),
          { ...profileOf(event.data), applicationId: event.data.applicationId, reservedAt: event.data.reservedAt },
        ],
      };
    case 'OrderVoucherConfirmed':
      return {
        ...current,
        vouchers: [
          ...current.vouchers.filter((v) => v.voucherId !== d.voucherId),
          entry(event.data, event.data.confirmedAt),
        ],
        reservations: without(current.reservations, event.data.applicationId),
      };
    case 'OrderVoucherDetached':
      return {
        ...current,
        vouchers: current.vouchers.filter((v) => !(v.voucherId === d.voucherId && v.applicationId === d.applicationId)),
        reservations: without(current.reservations, event.data.applicationId),
      };
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
};

/** The vouchers the order carries, in the order they were recorded (reservations are not among them). */
export const liveVouchers = (state: OrderState): OrderEntry[] => state?.vouchers ?? [];

/** The order's unsettled reservations. */
export const reservationsOf = (state: OrderState): Reservation[] => state?.reservations ?? [];
