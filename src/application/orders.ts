/**
 * The order stream `order-<orderId>` in the apply and rollback use cases: which vouchers an order
 * carries, decided race-free on the write side (its own expected revision; per-stream
 * serialisation in the order CommandHandler).
 *
 * Apply of a voucher that is not yet on the order (redemptions.ts):
 *   1. order stream: AttachVoucher → OrderVoucherAttached (pending), or STACKING_CONFLICT;
 *   2. voucher stream: ApplyVoucher, priced with the vouchers the order carried before;
 *   3. order stream: ConfirmVoucher (the discount is now known) — or, when 2 failed,
 *      DetachVoucher (`apply_failed`).
 * Crash window: a process that stops between 2 and 3 leaves a pending attachment whose
 * VoucherApplied exists. Pending attachments block further vouchers on the order (STACKING_CONFLICT
 * or a retryable CONCURRENT_MODIFICATION) for at most PENDING_TTL_MS (2 minutes); the next apply to
 * the order then settles each stale one by asking the voucher stream: applied → confirmed, not
 * applied → detached (`abandoned`). A repeat of the same apply confirms it at once. Rollback
 * detaches the application; a lost detach is repaired by repeating the rollback, or replaced
 * (`superseded`) when the voucher is applied to the order again.
 */
import { decideOrder, type OrderCommand } from '../domain/order/decide.ts';
import { orderStream } from '../domain/order/events.ts';
import { isStale, liveVouchers, type OrderEntry } from '../domain/order/state.ts';
import type { StackProfile } from '../domain/discount/stacking.ts';
import { voucherStream } from '../domain/voucher/events.ts';
import type { CallMetadata, EnvContext } from './context.ts';

const run = async (ctx: EnvContext, command: OrderCommand, meta: CallMetadata = {}): Promise<void> => {
  await ctx.orders.execute(orderStream(command.data.orderId), {
    decide: (state) => decideOrder(command, state), result: () => undefined, metadata: { ...meta },
  });
};

/** The vouchers that count on the order now (read only). */
export const vouchersOnOrder = async (ctx: EnvContext, orderId: string, now: Date): Promise<OrderEntry[]> => {
  const { result } = await ctx.orders.execute(orderStream(orderId), { decide: () => [], result: (state) => liveVouchers(state, now) });
  return result;
};

/** Settles pending attachments older than the TTL by what their voucher stream recorded. */
export const settleStale = async (ctx: EnvContext, orderId: string, now: Date, meta: CallMetadata): Promise<void> => {
  const { result: stale } = await ctx.orders.execute(orderStream(orderId), {
    decide: () => [], result: (state) => (state?.vouchers ?? []).filter((v) => isStale(v, now)),
  });
  for (const entry of stale) {
    const { result: applied } = await ctx.vouchers.execute(voucherStream(entry.voucherId), {
      decide: () => [],
      result: (state) => {
        const id = state?.liveByOrder.get(orderId);
        const application = id === undefined ? undefined : state!.applications.get(id);
        return application && { id: application.id, discount: application.discountAmount, orderValue: application.orderValue };
      },
    });
    const data = { orderId, voucher: entry as StackProfile };
    await run(ctx, applied
      ? { type: 'ConfirmVoucher', data: { ...data, applicationId: applied.id, orderValue: applied.orderValue, discountAmount: applied.discount }, metadata: { now } }
      : { type: 'DetachVoucher', data: { orderId, voucherId: entry.voucherId, applicationId: entry.applicationId, reason: 'abandoned' }, metadata: { now } }, meta);
  }
};

/** Step 1: attach (pending); returns the vouchers the order carried before this one. */
export const attachVoucher = async (
  ctx: EnvContext, orderId: string, applicationId: string, voucher: StackProfile, orderValue: number, now: Date, meta: CallMetadata,
): Promise<OrderEntry[]> => {
  const command: OrderCommand = { type: 'AttachVoucher', data: { orderId, applicationId, voucher, orderValue }, metadata: { now } };
  const { result } = await ctx.orders.execute(orderStream(orderId), {
    decide: (state) => decideOrder(command, state),
    result: (state) => liveVouchers(state, now).filter((v) => v.voucherId !== voucher.voucherId),
    metadata: { ...meta },
  });
  return result;
};

export const confirmVoucher = (
  ctx: EnvContext, orderId: string, applicationId: string, voucher: StackProfile, orderValue: number, discountAmount: number, now: Date, meta: CallMetadata,
): Promise<void> => run(ctx, { type: 'ConfirmVoucher', data: { orderId, applicationId, voucher, orderValue, discountAmount }, metadata: { now } }, meta);

export const detachVoucher = (
  ctx: EnvContext, orderId: string, voucherId: string, applicationId: string, reason: 'apply_failed' | 'rolled_back', now: Date, meta: CallMetadata,
): Promise<void> => run(ctx, { type: 'DetachVoucher', data: { orderId, voucherId, applicationId, reason }, metadata: { now } }, meta);
