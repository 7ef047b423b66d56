/**
 * The order stream `order-<orderId>` in the apply and rollback use cases: which vouchers an order
 * carries, decided race-free on the write side with the order's own expected revision.
 *
 * Apply of a voucher that is not yet on the order (redemptions.ts): the order's state and revision
 * are read (`orderForApply`), the voucher decides on its stream with the vouchers the order carries
 * (its evaluation applies the stacking rules and prices on the amount left), and then, by the
 * context's `applyMode`:
 * - `atomic`: the order's OrderVoucherConfirmed goes in the SAME atomic append as the
 *   VoucherApplied (the voucher handler's `also`, expected revision of both streams). Either both
 *   are written or neither, so there is no pending state and no crash window.
 * - `two-append` (stores without an atomic multi-stream append): single-stream appends only.
 *   1. reserve: OrderVoucherReserved on the order, with the revision read (the order's place);
 *   2. apply: the voucher decides and appends VoucherApplied (max_uses, customer_limit, validity,
 *      stacking with the vouchers on the order), or refuses;
 *   3. confirm (OrderVoucherConfirmed) or, on a refusal, release (OrderVoucherDetached
 *      `apply_failed`).
 *   The voucher stream is the truth for usage counts, and only it is public: a reservation left
 *   unsettled by a crash between the appends is settled by the next apply to the order
 *   (`clearReservations`), which asks the voucher stream with VoidReservation: the application was
 *   recorded → confirm it; it was not → the voucher records VoucherReservationVoided, so that no
 *   apply with that id can be recorded later, and the order detaches it (`abandoned`).
 * When the order moved in between (another voucher applied to it concurrently), the order's append
 * fails and the apply is decided again on the new order state.
 *
 * Rollback detaches the application; a lost detach is repaired by repeating the rollback, or
 * replaced (`superseded`) when the voucher is applied to the order again.
 */
import { decideOrder, type OrderCommand } from '../domain/order/decide.ts';
import { orderStream, type OrderEvent } from '../domain/order/events.ts';
import type { AppendResult, StreamAppend } from '../core/eventStore.ts';
import {
  liveVouchers,
  reservationsOf,
  type OrderEntry,
  type OrderState,
  type Reservation,
} from '../domain/order/state.ts';
import type { StackProfile } from '../domain/discount/stacking.ts';
import { DomainError } from '../domain/errors.ts';
import { decide } from '../domain/voucher/decide.ts';
import { commandKeys } from '../domain/voucher/snapshot.ts';
import { voucherStream } from '../domain/voucher/events.ts';
import type { CallMetadata, EnvContext } from './context.ts';

/**
 * How long a reservation written by another process is taken to be in flight; after that, an apply
 * to the order settles it as orphaned. Correctness does not hang on it (the voucher stream's
 * VoucherReservationVoided fences a late apply out); it only spares a slow apply from being voided.
 */
export const RESERVATION_TTL_MS = 10_000;

/**
 * Order states the order handler keeps in memory (least recently used dropped first). Every apply
 * in a checkout brings a new order, so the cache holds the last orders: it spares a read to the
 * commands that follow one another on an order within seconds (an apply's retries, a second
 * voucher); an order used again later is folded from its stream, a few events. Every cached state
 * is live data that each full collection of the main thread's heap marks, so the cache is kept
 * small (decision 107).
 */
export const ORDER_CACHE_SIZE = 1_000;

const run = async (ctx: EnvContext, command: OrderCommand, meta: CallMetadata = {}): Promise<void> => {
  await ctx.orders.execute(orderStream(command.data.orderId), {
    decide: (state) => decideOrder(command, state),
    result: () => undefined,
    metadata: { ...meta },
  });
};

/** The vouchers that count on the order now (read only). */
export const vouchersOnOrder = async (ctx: EnvContext, orderId: string): Promise<OrderEntry[]> => {
  const { result } = await ctx.orders.execute(orderStream(orderId), {
    decide: () => [],
    result: (state) => liveVouchers(state),
  });
  return result;
};

/** The order's part of an apply: appended atomically with the voucher's VoucherApplied, or reserved before it. */
export interface OrderForApply {
  /** The vouchers the order carries (the apply is priced and checked for stacking with them). */
  vouchers: OrderEntry[];
  /** Reservations not yet settled: `clearReservations` before deciding on the order. */
  reservations: Reservation[];
  /**
   * Two-append mode: appends OrderVoucherReserved with the revision read (ReserveApplication; its
   * stacking check throws STACKING_CONFLICT; WrongExpectedRevisionError when the order moved).
   */
  reserve(voucher: StackProfile, applicationId: string, orderValue: number): Promise<void>;
  /** The order stream's append recording the application (RecordApplication; its stacking check throws STACKING_CONFLICT). */
  append(
    voucher: StackProfile,
    applicationId: string,
    orderValue: number,
    discountAmount: number,
  ): StreamAppend<OrderEvent>;
  /** Tells the order handler's cache what the append wrote. */
  written(result: AppendResult): void;
  /** The order was not read but taken to be new (`guess`): its append expects no stream. */
  assumed: boolean;
}

/**
 * The order for an apply: its state and revision now (the append expects that revision). With
 * `guess`, an order this process holds nothing about is taken to be new without a read (a
 * checkout's order usually is): if it exists after all, the append fails on the order stream and
 * the apply is decided again on the order as read (see CommandHandler.peekOrAssumeNew).
 */
export const orderForApply = async (
  ctx: EnvContext,
  orderId: string,
  now: Date,
  meta: CallMetadata,
  guess = false,
): Promise<OrderForApply> => {
  const stream = orderStream(orderId);
  const { state, revision, assumed } = guess
    ? await ctx.orders.peekOrAssumeNew(stream)
    : { ...(await ctx.orders.peek(stream)), assumed: false };
  return new OrderRead(ctx, orderId, stream, state, revision, assumed, now, meta);
};

/** A class rather than an object of closures: made on every apply (see ApplyWork in redemptions.ts). */
class OrderRead implements OrderForApply {
  readonly vouchers: OrderEntry[];
  readonly reservations: Reservation[];
  private events: OrderEvent[] = [];

  constructor(
    private readonly ctx: EnvContext,
    private readonly orderId: string,
    private readonly stream: string,
    private readonly state: OrderState,
    private readonly revision: number,
    public assumed: boolean,
    private readonly now: Date,
    private readonly meta: CallMetadata,
  ) {
    this.vouchers = liveVouchers(state);
    this.reservations = reservationsOf(state);
  }

  async reserve(voucher: StackProfile, applicationId: string, orderValue: number): Promise<void> {
    const { orderId, now } = this;
    const events = decideOrder(
      { type: 'ReserveApplication', data: { orderId, applicationId, voucher, orderValue }, metadata: { now } },
      this.state,
    );
    const result = await this.ctx.events.appendToStream(
      this.stream,
      events.map((e) => ({ ...e, metadata: { ...this.meta } })),
      { expectedRevision: this.revision < 0 ? 'no_stream' : this.revision },
    );
    this.ctx.orders.learn(this.stream, this.revision, events, result.nextExpectedRevision);
    this.assumed = false; // the append expected what was assumed: the order was as taken
  }

  append(
    voucher: StackProfile,
    applicationId: string,
    orderValue: number,
    discountAmount: number,
  ): StreamAppend<OrderEvent> {
    const { orderId, now } = this;
    this.events = decideOrder(
      {
        type: 'RecordApplication',
        data: { orderId, applicationId, voucher, orderValue, discountAmount },
        metadata: { now },
      },
      this.state,
    );
    return {
      streamId: this.stream,
      expectedRevision: this.revision < 0 ? 'no_stream' : this.revision,
      events: this.events.map((e) => ({ ...e, metadata: { ...this.meta } })),
    };
  }

  written(result: AppendResult): void {
    this.ctx.orders.learn(this.stream, this.revision, this.events, result.nextExpectedRevision);
  }
}

export const detachVoucher = (
  ctx: EnvContext,
  orderId: string,
  voucherId: string,
  applicationId: string,
  reason: 'apply_failed' | 'rolled_back' | 'abandoned',
  now: Date,
  meta: CallMetadata,
): Promise<void> =>
  run(ctx, { type: 'DetachVoucher', data: { orderId, voucherId, applicationId, reason }, metadata: { now } }, meta);

export const confirmApplication = (
  ctx: EnvContext,
  orderId: string,
  applicationId: string,
  discountAmount: number,
  now: Date,
  meta: CallMetadata,
): Promise<void> =>
  run(ctx, { type: 'ConfirmApplication', data: { orderId, applicationId, discountAmount }, metadata: { now } }, meta);

/** Two-append applies of this process with their reservation written and not yet settled, per order handler. */
const inFlight = new WeakMap<object, Map<string, Promise<unknown>>>();
const flightsOf = (ctx: EnvContext): Map<string, Promise<unknown>> => {
  let flights = inFlight.get(ctx.orders);
  if (!flights) inFlight.set(ctx.orders, (flights = new Map()));
  return flights;
};
const flightKey = (orderId: string, applicationId: string): string => `${applicationId}\u0000${orderId}`;

/**
 * Runs `apply` (which reserves `applicationId` on the order and settles it) known to this process
 * as in flight, so that an apply of this process meeting its reservation waits for it instead of
 * settling it.
 */
export const inFlightApply = <T>(
  ctx: EnvContext,
  orderId: string,
  applicationId: string,
  apply: () => Promise<T>,
): Promise<T> => {
  const flights = flightsOf(ctx);
  const key = flightKey(orderId, applicationId);
  const running = apply().finally(() => flights.delete(key));
  flights.set(key, running);
  return running;
};

/**
 * Settles the order's unsettled reservations before an apply decides on it: one of this process
 * still in flight is awaited; one of the same voucher as the apply (a repeat after a crash, as a
 * rule), or older than RESERVATION_TTL_MS, is settled by the voucher stream
 * (`settleReservation`); a younger one of another voucher, written by another process, answers
 * 409 CONCURRENT_MODIFICATION (retry). The caller reads the order again afterwards.
 */
export const clearReservations = async (
  ctx: EnvContext,
  orderId: string,
  reservations: Reservation[],
  voucherId: string,
  now: Date,
  meta: CallMetadata,
): Promise<void> => {
  for (const reservation of reservations) {
    const running = flightsOf(ctx).get(flightKey(orderId, reservation.applicationId));
    if (running) {
      await running.catch(() => undefined); // its own answer is its caller's
      continue;
    }
    const age = now.getTime() - Date.parse(reservation.reservedAt);
    if (reservation.voucherId !== voucherId && age < RESERVATION_TTL_MS) {
      throw new DomainError(
        'CONCURRENT_MODIFICATION',
        `Voucher ${reservation.code} is being applied to this order; retry the request`,
        {},
      );
    }
    await settleReservation(ctx, orderId, reservation, now, meta);
  }
};

/**
 * Settles one reservation by what the voucher stream recorded (VoidReservation): the application
 * is there → confirmed on the order with its discount (or detached `rolled_back` when it was rolled
 * back since); it is not → the voucher voids it (no apply with its id is accepted after) and the
 * order detaches it (`abandoned`).
 */
export const settleReservation = async (
  ctx: EnvContext,
  orderId: string,
  reservation: Reservation,
  now: Date,
  meta: CallMetadata,
): Promise<void> => {
  const { voucherId, applicationId } = reservation;
  const command = { type: 'VoidReservation' as const, data: { voucherId, applicationId, orderId }, metadata: { now } };
  const { result: application } = await ctx.vouchers.execute(voucherStream(voucherId), {
    decide: (state) => decide(command, state),
    keys: (state) => commandKeys(command, state),
    result: (state) => state?.applications.get(applicationId),
    metadata: { ...meta },
  });
  if (application?.status === 'applied') {
    await confirmApplication(ctx, orderId, applicationId, application.discountAmount, now, meta);
    return;
  }
  await detachVoucher(ctx, orderId, voucherId, applicationId, application ? 'rolled_back' : 'abandoned', now, meta);
};
