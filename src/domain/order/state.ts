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

// Orders, entries and reservations are built from object literals, their other properties added in
// a fixed order, so that all of a kind share one V8 hidden class; spread copies
// (`{ ...current, vouchers }`) get one of their own each, about 400 bytes more for every order the
// command handler keeps (decision 064).

const order = (orderId: string, vouchers: OrderEntry[], reservations: Reservation[] | undefined): Order => {
  const built: Order = { orderId, vouchers };
  if (reservations !== undefined) built.reservations = reservations;
  return built;
};

type Profiled = OrderVoucherProfile & { applicationId: string };

/** The voucher's stacking profile and application, the fields an entry and a reservation share. */
const profiled = (d: Profiled): StackProfile & { orderValue: number; applicationId: string } => {
  const built: StackProfile & { orderValue: number; applicationId: string } = {
    voucherId: d.voucherId,
    code: d.code,
    type: d.voucherType,
    priority: d.priority,
    orderValue: d.orderValue,
    applicationId: d.applicationId,
  };
  if (d.stackRules) built.stackRules = d.stackRules;
  return built;
};

// Object.assign adds the properties one by one in this order, so entries (and reservations) share
// their hidden classes as literals do.
const entry = (d: Profiled & { discountAmount: number }, at: string): OrderEntry =>
  Object.assign(profiled(d), { discountAmount: d.discountAmount, attachedAt: at });

const reservation = (d: Profiled & { reservedAt: string }): Reservation =>
  Object.assign(profiled(d), { reservedAt: d.reservedAt });

const without = (reservations: Reservation[] | undefined, applicationId: string): Reservation[] | undefined =>
  reservations?.some((r) => r.applicationId === applicationId)
    ? reservations.filter((r) => r.applicationId !== applicationId)
    : reservations;

export const evolveOrder = (state: OrderState, event: OrderEvent): OrderState => {
  const current = state ?? order(event.data.orderId, [], undefined);
  const d = event.data;
  switch (event.type) {
    case 'OrderVoucherReserved':
      return order(current.orderId, current.vouchers, [
        ...(without(current.reservations, event.data.applicationId) ?? []),
        reservation(event.data),
      ]);
    case 'OrderVoucherConfirmed':
      return order(
        current.orderId,
        [...current.vouchers.filter((v) => v.voucherId !== d.voucherId), entry(event.data, event.data.confirmedAt)],
        without(current.reservations, event.data.applicationId),
      );
    case 'OrderVoucherDetached':
      return order(
        current.orderId,
        current.vouchers.filter((v) => !(v.voucherId === d.voucherId && v.applicationId === d.applicationId)),
        without(current.reservations, event.data.applicationId),
      );
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
