import { isoSeconds } from '../domain/clock.ts';
import { DomainError } from '../domain/errors.ts';
import type { Conditions, VoucherType } from '../domain/voucher/events.ts';
import type { ConditionsPatch } from '../domain/voucher/commands.ts';
import type { ValidationRule } from '../domain/discount/rules.ts';
import { decide } from '../domain/voucher/decide.ts';
import { voucherStream } from '../domain/voucher/events.ts';
import type { VoucherState } from '../domain/voucher/state.ts';
import type { CallMetadata, EnvContext } from './context.ts';
import { viewFromState } from './views.ts';
import type { VoucherDoc, VoucherView } from '../projections/voucherDetails.ts';

export interface CreateVoucherInput {
  code: string;
  type: VoucherType;
  value?: number;
  currency?: string;
  config?: Record<string, unknown>;
  conditions?: Conditions;
  validation_rules?: ValidationRule[];
}

const snapshot = (state: VoucherState): VoucherView => viewFromState(state!);

/** Creates a voucher: checks the request, claims the code, then records `VoucherCreated`. */
export const createVoucher = async (
  ctx: EnvContext,
  input: CreateVoucherInput,
  meta: CallMetadata,
): Promise<VoucherView> => {
  const now = ctx.clock.now();
  const voucherId = ctx.ids.voucherId();
  const command = {
    type: 'CreateVoucher' as const,
    data: {
      voucherId,
      code: input.code,
      voucherType: input.type,
      value: input.value,
      currency: input.currency,
      config: input.config,
      conditions: input.conditions,
      ...(input.validation_rules !== undefined ? { validationRules: input.validation_rules } : {}),
    },
    metadata: { now },
  };
  decide(command, null); // every rejection happens before the code is claimed
  await ctx.codes.claim(input.code, voucherId, now);
  const { result, position } = await ctx.vouchers.execute(voucherStream(voucherId), {
    decide: (state) => decide(command, state),
    result: snapshot,
    metadata: { ...meta },
  });
  await ctx.projector.waitFor(position, ctx.readYourWritesMs);
  return { ...result, created_seq: position };
};

export interface UpdateVoucherInput {
  value?: number;
  currency?: string | null;
  conditions?: ConditionsPatch;
  status?: 'active' | 'inactive';
  /** Advanced types: replaces the stored config. */
  config?: Record<string, unknown>;
  /** Replaces the stored rules; null removes them. */
  validation_rules?: ValidationRule[] | null;
}

export const updateVoucher = async (
  ctx: EnvContext,
  voucherId: string,
  input: UpdateVoucherInput,
  meta: CallMetadata,
): Promise<VoucherView> => {
  const { validation_rules: validationRules, ...rest } = input;
  const data = { voucherId, ...rest, ...(validationRules !== undefined ? { validationRules } : {}) };
  const command = { type: 'UpdateVoucher' as const, data, metadata: { now: ctx.clock.now() } };
  const { result, position } = await ctx.vouchers.execute(voucherStream(voucherId), {
    decide: (state) => decide(command, state),
    result: snapshot,
    metadata: { ...meta },
  });
  await ctx.projector.waitFor(position, ctx.readYourWritesMs);
  return result;
};

/** Soft delete: the voucher becomes inactive and stays readable; repeating it changes nothing. */
export const deactivateVoucher = async (
  ctx: EnvContext,
  voucherId: string,
  meta: CallMetadata,
): Promise<VoucherView> => {
  const command = { type: 'DeactivateVoucher' as const, data: { voucherId }, metadata: { now: ctx.clock.now() } };
  const { result, position } = await ctx.vouchers.execute(voucherStream(voucherId), {
    decide: (state) => decide(command, state),
    result: snapshot,
    metadata: { ...meta },
  });
  await ctx.projector.waitFor(position, ctx.readYourWritesMs);
  return result;
};

/** Records `VoucherExpired` for a voucher whose valid_until has passed (no-op otherwise). */
export const expireVoucher = async (ctx: EnvContext, voucherId: string): Promise<boolean> => {
  const command = { type: 'ExpireVoucher' as const, data: { voucherId }, metadata: { now: ctx.clock.now() } };
  const { position } = await ctx.vouchers.execute(voucherStream(voucherId), {
    decide: (state) => decide(command, state),
    result: () => undefined,
    metadata: { correlationId: 'expiry-scheduler' },
  });
  return position > 0;
};

/** Finds vouchers past valid_until still recorded active (a read-side routing query) and expires them. */
export const expireDueVouchers = async (ctx: EnvContext, limit = 500): Promise<number> => {
  const now = isoSeconds(ctx.clock.now());
  const due = await ctx.reads.find<VoucherDoc>('vouchers', { status: 'active', valid_until: { $lte: now } }, { limit });
  let expired = 0;
  for (const view of due) {
    try {
      if (await expireVoucher(ctx, view.id)) expired += 1;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
    }
  }
  return expired;
};
