import { DomainError } from '../domain/errors.ts';
import { isoSeconds } from '../domain/clock.ts';
import type { Filter } from '../core/readStore.ts';
import type { ApplicationView } from '../projections/usageHistory.ts';
import type { VoucherDoc, VoucherView } from '../projections/voucherDetails.ts';
import type { VoucherUsage } from '../projections/voucherUsage.ts';
import type { EnvContext } from './context.ts';
import { renderUsage, renderVoucher } from './views.ts';

export const USAGE_HISTORY_SIZE = 100;

export interface Page<T> {
  data: T[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

const notFound = (voucherId: string): DomainError =>
  new DomainError('VOUCHER_NOT_FOUND', `Voucher ${voucherId} was not found`, { voucher_id: voucherId });

/** Vouchers with their usage counts (kept apart, see projections/voucherUsage.ts). */
const withUsage = async (ctx: EnvContext, docs: VoucherDoc[]): Promise<VoucherView[]> => {
  if (docs.length === 0) return [];
  const usage = await ctx.reads.getMany<VoucherUsage>(
    'voucher_usage',
    docs.map((d) => d.id),
  );
  return docs.map((doc) => ({ ...doc, usage_count: usage.get(doc.id)?.usage_count ?? 0 }));
};

export const getVoucher = async (ctx: EnvContext, voucherId: string): Promise<Record<string, unknown>> => {
  const doc = await ctx.reads.get<VoucherDoc>('vouchers', voucherId);
  if (!doc) throw notFound(voucherId);
  const [view] = await withUsage(ctx, [doc]);
  const history = await ctx.reads.find<ApplicationView>(
    'applications',
    { voucher_id: voucherId },
    {
      sort: [['applied_seq', -1]],
      limit: USAGE_HISTORY_SIZE,
    },
  );
  return { ...renderVoucher(view!, ctx.clock.now()), usage_history: history.map(renderUsage) };
};

export interface ListVouchersQuery {
  limit: number;
  offset: number;
  status?: 'active' | 'inactive' | 'expired';
  type?: string;
  created_after?: string;
  created_before?: string;
}

/** `status` filters by the status a reader sees: expiry by the clock counts at once. */
const statusFilter = (status: ListVouchersQuery['status'], now: string): Filter => {
  switch (status) {
    case 'active':
      return { status: 'active', $or: [{ valid_until: null }, { valid_until: { $gt: now } }] };
    case 'expired':
      return { $or: [{ status: 'expired' }, { status: 'active', valid_until: { $lte: now } }] };
    case 'inactive':
      return { status: 'inactive' };
    default:
      return {};
  }
};

/** Active as a reader sees it: a voucher past its valid_until reads `expired` before its VoucherExpired is recorded. */
export const activeFilter = (now: string): Filter => statusFilter('active', now);

export const listVouchers = async (ctx: EnvContext, q: ListVouchersQuery): Promise<Page<Record<string, unknown>>> => {
  const now = ctx.clock.now();
  const filter: Filter = statusFilter(q.status, isoSeconds(now));
  if (q.type !== undefined) filter.type = q.type;
  if (q.created_after !== undefined || q.created_before !== undefined) {
    filter.created_at = {
      ...(q.created_after !== undefined ? { $gt: q.created_after } : {}),
      ...(q.created_before !== undefined ? { $lt: q.created_before } : {}),
    };
  }
  const [docs, total] = await Promise.all([
    ctx.reads.find<VoucherDoc>('vouchers', filter, { sort: [['created_seq', -1]], skip: q.offset, limit: q.limit }),
    ctx.reads.count('vouchers', filter),
  ]);
  const views = await withUsage(ctx, docs);
  return {
    data: views.map((v) => renderVoucher(v, now)),
    total,
    limit: q.limit,
    offset: q.offset,
    has_more: q.offset + views.length < total,
  };
};

export const listApplications = async (
  ctx: EnvContext,
  voucherId: string,
  limit: number,
  offset: number,
): Promise<Page<Record<string, unknown>>> => {
  if (!(await ctx.reads.get('vouchers', voucherId))) throw notFound(voucherId);
  const filter = { voucher_id: voucherId };
  const [views, usage] = await Promise.all([
    ctx.reads.find<ApplicationView>('applications', filter, { sort: [['applied_seq', -1]], skip: offset, limit }),
    ctx.reads.get<VoucherUsage>('voucher_usage', voucherId),
  ]);
  // Read, not counted: a voucher may have millions of applications. Counted only without a usage
  // document (a voucher never applied) or one an earlier build wrote (no total until a replay).
  const total = usage?.applications_total ?? (await ctx.reads.count('applications', filter));
  return { data: views.map(renderUsage), total, limit, offset, has_more: offset + views.length < total };
};
