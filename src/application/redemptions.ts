import type { EnvironmentEvent } from './events.ts';
import { DomainError } from '../domain/errors.ts';
import type { Customer, Order } from '../domain/discount/types.ts';
import { decide } from '../domain/voucher/decide.ts';
import { evaluate, stackProfile, type Evaluation } from '../domain/voucher/evaluate.ts';
import { voucherStream, type VoucherStreamEvent } from '../domain/voucher/events.ts';
import { commandKeys, customerKey, orderKeys } from '../domain/voucher/snapshot.ts';
import { orderStream } from '../domain/order/events.ts';
import { WrongExpectedRevisionError, type StreamAppend } from '../core/eventStore.ts';
import type { StackProfile } from '../domain/discount/stacking.ts';
import type { Outcome, Work } from '../core/commandHandler.ts';
import type { Voucher, VoucherState } from '../domain/voucher/state.ts';
import type { ApplicationView } from '../projections/usageHistory.ts';
import { QUOTE_TTL_MS, quoteKey, type CallMetadata, type EnvContext } from './context.ts';
import {
  clearReservations,
  confirmApplication,
  detachVoucher,
  inFlightApply,
  orderForApply,
  vouchersOnOrder,
  type OrderForApply,
} from './orders.ts';
import { suggestCodes } from './suggestions.ts';
import { QuotaExceededError } from './quotas.ts';
import { fingerprint, renderApplication, type ApplicationResponse } from './views.ts';

/**
 * A quote as kept: what apply needs to price the order again, the order's lines as tuples
 * `[id, price, quantity]` or `[id, price, quantity, category]` (an item object spells its member
 * names on every line: about half the bytes of a typical quote went to them).
 */
interface KeptQuote {
  value: number;
  currency?: string;
  lines?: Array<[string, number, number] | [string, number, number, string]>;
  customer?: Customer;
}

/**
 * What VOUCHER_NOT_FOUND may show the caller: similar existing codes only to a key that may read
 * vouchers (`vouchers:read`); a key that may only redeem gets an empty `suggestions` list.
 */
export interface CodeLookup {
  suggest: boolean;
}

const keptQuote = (order: Order, customer: Customer | undefined): KeptQuote => ({
  value: order.value,
  ...(order.currency !== undefined ? { currency: order.currency } : {}),
  ...(order.items !== undefined
    ? {
        lines: order.items.map((i) =>
          i.category === undefined ? [i.id, i.price, i.quantity] : [i.id, i.price, i.quantity, i.category],
        ),
      }
    : {}),
  ...(customer !== undefined ? { customer } : {}),
});

/** The order and customer a kept quote holds, equal (and so with the same fingerprint) to those validated. */
const quotedOrder = (quote: KeptQuote): { order: Order; customer?: Customer } => {
  const order: Order = { value: quote.value };
  if (quote.currency !== undefined) order.currency = quote.currency;
  if (quote.lines !== undefined) {
    order.items = quote.lines.map(([id, price, quantity, category]) =>
      category === undefined ? { id, price, quantity } : { id, price, quantity, category },
    );
  }
  return { order, customer: quote.customer };
};

/**
 * Keeps the quote of a validate with `order.id` for 30 minutes, as a record of the key that asked
 * (`owner`): at most `ctx.quotas.outstandingQuotes` live ones per key, else 429 QUOTA_EXCEEDED.
 * A validate of the same code and order id replaces the key's quote without counting twice.
 */
const keepQuote = async (
  ctx: EnvContext,
  voucherId: string,
  orderId: string,
  order: Order,
  customer: Customer | undefined,
  owner: string | undefined,
  now: Date,
): Promise<void> => {
  const key = quoteKey(voucherId, orderId);
  const quote = keptQuote(order, customer);
  const expiresAt = now.getTime() + QUOTE_TTL_MS;
  if (owner === undefined) return ctx.kv.put('quotes', key, quote, expiresAt);
  const limit = ctx.quotas.outstandingQuotes;
  const kept = await ctx.kv.putOwned('quotes', key, quote, expiresAt, { owner, limit });
  if (!kept.stored) {
    throw new QuotaExceededError('outstanding_quotes', limit, kept.count, kept.nextExpiresAt ?? expiresAt, now);
  }
};

/** The voucher id behind a code, or VOUCHER_NOT_FOUND with similar existing codes. */
export const resolveCode = async (ctx: EnvContext, code: string, lookup: CodeLookup): Promise<string> => {
  const voucherId = await ctx.codes.lookup(code);
  if (voucherId !== undefined) return voucherId;
  const suggestions = lookup.suggest ? await suggestCodes(ctx, code) : [];
  throw new DomainError('VOUCHER_NOT_FOUND', `No voucher has the code ${code}`, { code, suggestions });
};

const orderFingerprint = (order: Order): string =>
  fingerprint({ value: order.value, currency: order.currency ?? null, items: order.items ?? [] });

/**
 * Evaluates the voucher against the order without changing anything. When the order carries an
 * id, the quote is kept for 30 minutes so that apply may name only the order id.
 */
export const validateVoucher = async (
  ctx: EnvContext,
  code: string,
  order: Order,
  customer: Customer | undefined,
  lookup: CodeLookup,

  /** The API key asking: the quote counts against its quota. */
  owner?: string,
): Promise<Evaluation> => {
  const voucherId = await resolveCode(ctx, code, lookup);
  ctx.telemetry.record(voucherId, order.id, customer?.segment); // an order attempt, for conversion (buffered, see telemetry.ts)
  const now = ctx.clock.now();
  // With order.id, stacking is checked against the vouchers the order carries (orders.ts).
  const onOrder = order.id !== undefined ? await vouchersOnOrder(ctx, order.id) : [];
  const result = await ctx.vouchers.read(
    voucherStream(voucherId),
    (state: VoucherState) => {
      if (order.id !== undefined) refuseOtherOrderOnSameId(state!, order, customer);
      return evaluate(state!, order, customer, now, onOrder);
    },
    (state) => [
      ...(order.id !== undefined ? orderKeys(order.id, state) : []),
      ...(customer?.id !== undefined ? [customerKey(customer.id)] : []),
    ],
  );
  if (order.id !== undefined) await keepQuote(ctx, voucherId, order.id, order, customer, owner, now);
  return result;
};

/**
 * Validate agrees with apply: when the order id already carries this voucher with another order
 * or customer, apply would answer 409 VOUCHER_ALREADY_APPLIED, and so does validate.
 */
const refuseOtherOrderOnSameId = (voucher: Voucher, order: Order, customer: Customer | undefined): void => {
  const applicationId = voucher.liveByOrder.get(order.id!);
  if (applicationId === undefined) return;
  const application = voucher.applications.get(applicationId)!;
  const same =
    application.orderFingerprint === orderFingerprint(order) &&
    (customer === undefined || application.customerFingerprint === fingerprint(customer));
  if (!same) {
    throw new DomainError(
      'VOUCHER_ALREADY_APPLIED',
      `Voucher ${voucher.code} is already applied to order ${order.id}`,
      {
        order_id: order.id,
        voucher_id: voucher.id,
      },
    );
  }
};

export interface ApplyInput {
  code: string;
  order_id: string;
  order?: Order;
  customer?: Customer;
}

export interface ApplyOutcome {
  application: ApplicationResponse;
  replayed: boolean;
}

type ApplyCommand = Extract<Parameters<typeof decide>[0], { type: 'ApplyVoucher' }>;

type ApplyResult = { outcome: ApplyOutcome; orderValue: number };

/** The stored application of the order, as an apply answers it. */
const answer = (state: VoucherState, orderId: string, replayed: boolean): ApplyResult => {
  const application = state!.applications.get(state!.liveByOrder.get(orderId)!)!;
  return {
    outcome: { application: renderApplication(state!, application), replayed },
    orderValue: application.orderValue,
  };
};

/**
 * The ApplyVoucher work on the voucher stream (one write, or none for a repeat), priced with the
 * vouchers on the order; in the atomic mode, the order's record of the application goes in the
 * same append (`order`).
 */
class ApplyWork implements Work<VoucherStreamEvent, VoucherState, ApplyResult, EnvironmentEvent> {
  readonly metadata: Record<string, unknown>;

  constructor(
    private readonly command: ApplyCommand,
    meta: CallMetadata,
    private readonly order?: OrderForApply,
  ) {
    this.metadata = { ...meta };
  }

  decide(state: VoucherState): VoucherStreamEvent[] {
    return decide(this.command, state);
  }

  keys(state: VoucherState): string[] {
    return commandKeys(this.command, state);
  }

  result(state: VoucherState, events: VoucherStreamEvent[]): ApplyResult {
    return answer(state, this.command.data.orderId, events.length === 0);
  }

  also(events: VoucherStreamEvent[], state: VoucherState): StreamAppend<EnvironmentEvent>[] {
    const applied = events.find((e) => e.type === 'VoucherApplied');
    return applied && this.order
      ? [
          this.order.append(
            stackProfile(state!),
            applied.data.applicationId,
            applied.data.orderValue,
            applied.data.discountAmount,
          ),
        ]
      : [];
  }
}

type Applied = ApplyResult & { position: number };

const runApply = async (
  ctx: EnvContext,
  command: ApplyCommand,
  meta: CallMetadata,
  order: OrderForApply,
): Promise<Applied> => {
  const { result, position, also } = await ctx.vouchers.execute(
    voucherStream(command.data.voucherId),
    new ApplyWork(command, meta, order),
  );
  if (also?.[0]) order.written(also[0]);
  return { ...result, position };
};

/**
 * The apply with single-stream appends (orders.ts, `two-append`): the voucher decides first without
 * writing (a refusal or a repeat answers as in the atomic mode, and nothing is written); then the
 * order's reservation, the voucher's VoucherApplied (decided again: it may refuse now), and the
 * order's confirmation, or its release when the voucher refused.
 */
const runTwoAppends = async (
  ctx: EnvContext,
  command: ApplyCommand,
  meta: CallMetadata,
  order: OrderForApply,
): Promise<Applied> => {
  const { orderId, voucherId, applicationId } = command.data;
  const stream = voucherStream(voucherId);
  type Plan = { voucher: StackProfile; orderValue: number } | { repeat: ApplyResult };
  const planned = await ctx.vouchers.read(
    stream,
    (state): Plan => {
      const applied = decide(command, state).find((e) => e.type === 'VoucherApplied');
      return applied
        ? { voucher: stackProfile(state!), orderValue: applied.data.orderValue }
        : { repeat: answer(state, orderId, true) };
    },
    (state) => commandKeys(command, state),
  );
  const now = command.metadata.now;
  if ('repeat' in planned) {
    // A repeat after a crash: the order, not read yet, may still hold the first attempt's reservation.
    if (order.assumed) {
      const read = await orderForApply(ctx, orderId, now, meta);
      await clearReservations(ctx, orderId, read.reservations, voucherId, now, meta);
    }
    return { ...planned.repeat, position: 0 };
  }
  return inFlightApply(ctx, orderId, applicationId, async () => {
    await order.reserve(planned.voucher, applicationId, planned.orderValue);
    ctx.applyHooks?.afterReserve?.(orderId, applicationId);
    let applied: Outcome<ApplyResult>;
    try {
      applied = await ctx.vouchers.execute(stream, new ApplyWork(command, meta));
    } catch (error) {
      // Refused: the order's place is given back. Any other failure leaves the reservation to be
      // settled by the voucher stream (the append may have been written).
      if (error instanceof DomainError)
        await detachVoucher(ctx, orderId, voucherId, applicationId, 'apply_failed', now, meta);
      throw error;
    }
    if (applied.result.outcome.replayed) {
      // A repeat of an application recorded meanwhile: this reservation is not needed.
      await detachVoucher(ctx, orderId, voucherId, applicationId, 'apply_failed', now, meta);
      return { ...applied.result, position: applied.position };
    }
    ctx.applyHooks?.afterApply?.(orderId, applicationId);
    const { application } = applied.result.outcome;
    await confirmApplication(ctx, orderId, applicationId, application.discount_amount, now, meta);
    return { ...applied.result, position: applied.position };
  });
};

/** Attempts of an apply whose order moved meanwhile (another voucher applied to it at once). */
const ORDER_ATTEMPTS = 5;
/** Rounds of waiting for (or settling) other applies' reservations on the order, at most. */
const SETTLE_ROUNDS = 64;

/**
 * Applies the voucher to an order: from the order in the request, else from the quote kept by
 * validate, re-evaluated against the voucher as it is now. A repeat with the same (or no) order
 * and customer returns the stored application. The order stream records the vouchers the order
 * carries, for stacking, in the same atomic append as the VoucherApplied, or with a reservation
 * before it and a confirmation after it (`ctx.applyMode`, see orders.ts).
 */
export const applyVoucher = async (
  ctx: EnvContext,
  input: ApplyInput,
  meta: CallMetadata,
  lookup: CodeLookup,
): Promise<ApplyOutcome> => {
  const voucherId = await resolveCode(ctx, input.code, lookup);
  let { order, customer } = input;
  if (order === undefined) {
    const kept = await ctx.kv.get<KeptQuote>('quotes', quoteKey(voucherId, input.order_id));
    if (kept) {
      const quote = quotedOrder(kept);
      order = quote.order;
      customer = customer ?? quote.customer;
    }
  }
  const requestOrderFingerprint = input.order && orderFingerprint(input.order);
  const now = ctx.clock.now();
  const command = {
    type: 'ApplyVoucher' as const,
    data: {
      voucherId,
      applicationId: ctx.ids.applicationId(now),
      orderId: input.order_id,
      order,
      customer,
      requestOrderFingerprint,
      requestCustomerFingerprint: input.customer && fingerprint(input.customer),
      orderFingerprint:
        order === undefined ? '' : order === input.order ? requestOrderFingerprint! : orderFingerprint(order),
      customerFingerprint: fingerprint(customer ?? null),
    },
    metadata: { now },
  };
  const run = ctx.applyMode === 'two-append' ? runTwoAppends : runApply;
  let settled = 0;
  for (let attempt = 1; ; attempt += 1) {
    if (attempt > ORDER_ATTEMPTS || settled > SETTLE_ROUNDS)
      throw new DomainError(
        'CONCURRENT_MODIFICATION',
        'The order is being changed by another request; retry the request',
        {},
      );
    const onOrder = await orderForApply(ctx, input.order_id, now, meta, attempt === 1);
    if (onOrder.reservations.length > 0) {
      // Reservations of two-append applies: wait for them or settle them, then read the order again.
      await clearReservations(ctx, input.order_id, onOrder.reservations, voucherId, now, meta);
      settled += 1;
      attempt -= 1; // another apply finished: not a conflict
      continue;
    }
    let applied: Applied;
    try {
      applied = await run(
        ctx,
        { ...command, data: { ...command.data, orderVouchers: onOrder.vouchers } },
        meta,
        onOrder,
      );
    } catch (error) {
      // A rejection decided on a guessed order is not trusted: decide again on the order as read.
      if (onOrder.assumed && error instanceof DomainError) continue;
      if (!(error instanceof WrongExpectedRevisionError) || error.streamId !== orderStream(input.order_id)) throw error;
      ctx.orders.forget(orderStream(input.order_id)); // another request wrote to the order: read it again
      continue;
    }
    await ctx.projector.waitFor(applied.position, ctx.readYourWritesMs);
    return applied.outcome;
  }
};

/** Reverses an application: usage counts go down by one; repeating it changes nothing. */
export const rollbackApplication = async (
  ctx: EnvContext,
  applicationId: string,
  reason: string | undefined,
  meta: CallMetadata,
): Promise<ApplicationResponse> => {
  // Routing only: the read model says which voucher holds the application; the aggregate decides.
  const view = await ctx.reads.get<ApplicationView>('applications', applicationId);
  if (!view)
    throw new DomainError('APPLICATION_NOT_FOUND', `Application ${applicationId} was not found`, {
      application_id: applicationId,
    });
  const command = {
    type: 'RollbackApplication' as const,
    data: { voucherId: view.voucher_id, applicationId, reason },
    metadata: { now: ctx.clock.now() },
  };
  const { result, position } = await ctx.vouchers.execute(voucherStream(view.voucher_id), {
    decide: (state) => decide(command, state),
    keys: (state) => commandKeys(command, state),
    result: (state) => renderApplication(state!, state!.applications.get(applicationId)!),
    metadata: { ...meta },
  });
  // The order no longer carries it (also on a repeat, which repairs a detach lost before).
  await detachVoucher(ctx, result.order_id, view.voucher_id, applicationId, 'rolled_back', command.metadata.now, meta);
  await ctx.projector.waitFor(position, ctx.readYourWritesMs);
  return result;
};
