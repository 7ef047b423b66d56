import { isoSeconds } from '../domain/clock.ts';
import type { VoucherDoc } from '../projections/voucherDetails.ts';
import type { EnvContext } from './context.ts';
import { activeFilter } from './queries.ts';

/**
 * "Did you mean" codes on VOUCHER_NOT_FOUND, in bounded time whatever the input (decision 018):
 *  - only for an unknown code of at most SUGGEST_MAX_LENGTH characters (anything longer: none);
 *  - candidates: the active codes sharing its first character that sort next to it, at most
 *    SUGGEST_NEIGHBOURS on each side (two indexed range scans on status and code_lower);
 *  - each compared by an edit distance with a cutoff, max(2, floor(length / 3)) ≤ 10, computed
 *    in a band of 2 × cutoff + 1 cells a row and abandoned once a row exceeds the cutoff.
 * So one lookup reads at most 2 × SUGGEST_NEIGHBOURS documents and computes at most
 * 2 × SUGGEST_NEIGHBOURS × 32 × 21 distance cells.
 */
export const SUGGEST_MAX_LENGTH = 32;
export const SUGGEST_NEIGHBOURS = 50;
export const SUGGESTIONS = 5;

/** Work done by one lookup (tests assert its bounds; nothing else reads it). */
export interface SuggestionWork {
  /** Candidate codes read. */
  candidates: number;
  /** Edit-distance cells computed. */
  cells: number;
}

/**
 * Levenshtein distance of `a` and `b` when it is at most `max`, else `max + 1`. Only the band of
 * cells within `max` of the diagonal is computed (Ukkonen), and the computation stops at the
 * first row whose every cell exceeds `max`.
 */
export const boundedEditDistance = (
  a: string,
  b: string,
  max: number,
  work: SuggestionWork = { candidates: 0, cells: 0 },
): number => {
  const over = max + 1;
  if (Math.abs(a.length - b.length) > max) return over;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => (j <= max ? j : over));
  for (let i = 1; i <= a.length; i += 1) {
    const current = new Array<number>(b.length + 1).fill(over);
    current[0] = i <= max ? i : over;
    const from = Math.max(1, i - max);
    const to = Math.min(b.length, i + max);
    let rowMin = current[0];
    for (let j = from; j <= to; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const cell = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost, over);
      current[j] = cell;
      if (cell < rowMin) rowMin = cell;
    }
    work.cells += Math.max(0, to - from + 1);
    if (rowMin > max) return over;
    previous = current;
  }
  return Math.min(previous[b.length]!, over);
};

/**
 * Up to SUGGESTIONS active codes close to an unknown one, closest first, ties alphabetical.
 * Inactive codes and codes expired by the clock are never suggested.
 */
export const suggestCodes = async (
  ctx: EnvContext,
  code: string,
  work: SuggestionWork = { candidates: 0, cells: 0 },
): Promise<string[]> => {
  const wanted = code.toLowerCase();
  if (wanted.length === 0 || code.length > SUGGEST_MAX_LENGTH || wanted.length > SUGGEST_MAX_LENGTH) return [];
  const first = wanted.slice(0, 1);
  const active = activeFilter(isoSeconds(ctx.clock.now()));
  const [after, before] = await Promise.all([
    ctx.reads.find<VoucherDoc>(
      'vouchers',
      { ...active, code_lower: { $gte: wanted, $lt: `${first}\uffff` } },
      { sort: [['code_lower', 1]], limit: SUGGEST_NEIGHBOURS },
    ),
    ctx.reads.find<VoucherDoc>(
      'vouchers',
      { ...active, code_lower: { $gte: first, $lt: wanted } },
      { sort: [['code_lower', -1]], limit: SUGGEST_NEIGHBOURS },
    ),
  ]);
  const max = Math.max(2, Math.floor(wanted.length / 3));
  const close: Array<{ code: string; distance: number }> = [];
  for (const candidate of [...before, ...after]) {
    work.candidates += 1;
    const distance = boundedEditDistance(wanted, candidate.code_lower, max, work);
    if (distance <= max) close.push({ code: candidate.code, distance });
  }
  return close
    .sort((x, y) => x.distance - y.distance || (x.code < y.code ? -1 : 1))
    .slice(0, SUGGESTIONS)
    .map((c) => c.code);
};
