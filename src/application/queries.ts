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
  const [views, total] = await Promise.all([
    ctx.reads.find<ApplicationView>('applications', filter, { sort: [['applied_seq', -1]], skip: offset, limit }),
    ctx.reads.count('applications', filter),
  ]);
  return { data: views.map(renderUsage), total, limit, offset, has_more: offset + views.length < total };
};

/** Damerau-free Levenshtein distance, two rows. */
export const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
};

/**
 * Up to 5 active codes close to an unknown one (inactive and expired codes are never revealed):
 * candidates share its first character (an indexed range scan, at most 1,000), ranked by edit
 * distance, kept within max(2, length / 3).
 */
export const suggestCodes = async (ctx: EnvContext, code: string): Promise<string[]> => {
  const wanted = code.toLowerCase();
  const first = wanted.slice(0, 1);
  // Active as a reader sees it: a voucher past its valid_until reads `expired` before its
  // VoucherExpired is recorded (statusFilter), and is not suggested either.
  const active = statusFilter('active', isoSeconds(ctx.clock.now()));
  const candidates = await ctx.reads.find<VoucherDoc>(
    'vouchers',
    { ...active, code_lower: { $gte: first, $lt: `${first}\uffff` } },
    {
      sort: [['code_lower', 1]],
      limit: 1_000,
    },
  );
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  return candidates
    .map((v) => ({ code: v.code, distance: editDistance(wanted, v.code_lower) }))
    .filter((c) => c.distance <= limit)
    .sort((a, b) => a.distance - b.distance || (a.code < b.code ? -1 : 1))
    .slice(0, 5)
    .map((c) => c.code);
};
