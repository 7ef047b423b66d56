/**
 * The order stream `order-<orderId>` in the apply and rollback use cases: which vouchers an order
 * carries, decided race-free on the write side with the order's own expected revision.
 *
 * Apply of a voucher that is not yet on the order (redemptions.ts): the order's state and revision
 * are read (`orderForApply`), the voucher decides on its stream with the vouchers the order carries
 * (its evaluation applies the stacking rules and prices on the amount left), and the order's
 * OrderVoucherConfirmed goes in the SAME atomic append as the VoucherApplied (the
 * voucher handler's `also`, expected revision of both streams). Either both are written or
 * neither, so there is no pending state and no crash window. When the order moved in between
 * (another voucher applied to it concurrently), the append fails on the order stream and the apply
 * is decided again on the new order state.
 *
 * Rollback detaches the application; a lost detach is repaired by repeating the rollback, or
 * replaced (`superseded`) when the voucher is applied to the order again.
 */
import { decideOrder, type OrderCommand } from '../domain/order/decide.ts';
import { orderStream, type OrderEvent } from '../domain/order/events.ts';
import type { AppendResult, StreamAppend } from '../core/eventStore.ts';
import { liveVouchers, type OrderEntry, type OrderState } from '../domain/order/state.ts';
import type { StackProfile } from '../domain/discount/stacking.ts';
import type { CallMetadata, EnvContext } from './context.ts';

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

/** The order's part of an apply, to be appended atomically with the voucher's VoucherApplied. */
export interface OrderForApply {
  /** The vouchers the order carries (the apply is priced and checked for stacking with them). */
  vouchers: OrderEntry[];
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
  private events: OrderEvent[] = [];

  constructor(
    private readonly ctx: EnvContext,
    private readonly orderId: string,
    private readonly stream: string,
    private readonly state: OrderState,
    private readonly revision: number,
    readonly assumed: boolean,
    private readonly now: Date,
    private readonly meta: CallMetadata,
  ) {
    this.vouchers = liveVouchers(state);
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
  reason: 'apply_failed' | 'rolled_back',
  now: Date,
  meta: CallMetadata,
): Promise<void> =>
  run(ctx, { type: 'DetachVoucher', data: { orderId, voucherId, applicationId, reason }, metadata: { now } }, meta);
