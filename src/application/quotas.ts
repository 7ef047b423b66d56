import { isoSeconds } from '../domain/clock.ts';
import { DomainError } from '../domain/errors.ts';

/**
 * Per-API-key quotas on what a key leaves stored behind its requests (operators set them:
 * config.ts, QUOTA_*). See docs/decisions/020-bounded-storage-per-key.md.
 */
export interface Quotas {
  /** Quotes kept by validate with `order.id` and not yet expired (each is kept 30 minutes). */
  outstandingQuotes: number;
  /** Exports of the key still processing. */
  pendingExports: number;
  /** Export files of the key kept on disk (24 hours after completion), counting the exports processing. */
  exportFiles: number;
}

export const DEFAULT_QUOTAS: Quotas = { outstandingQuotes: 1_000, pendingExports: 3, exportFiles: 10 };

/** The name of each quota as `details.quota` gives it, and its configuration variable. */
export const QUOTAS = {
  outstanding_quotes: { member: 'outstandingQuotes', variable: 'QUOTA_OUTSTANDING_QUOTES' },
  pending_exports: { member: 'pendingExports', variable: 'QUOTA_PENDING_EXPORTS' },
  export_files: { member: 'exportFiles', variable: 'QUOTA_EXPORT_FILES' },
} as const satisfies Record<string, { member: keyof Quotas; variable: string }>;

export type QuotaName = keyof typeof QUOTAS;

const MESSAGES: Record<QuotaName, (current: number, at: string) => string> = {
  outstanding_quotes: (n, at) =>
    `This API key has ${n} outstanding quotes, the limit of its outstanding_quotes quota (validate with order.id keeps a quote 30 minutes; without order.id it keeps none, and apply then needs the order). The oldest expires at ${at}`,
  pending_exports: (n, at) =>
    `This API key has ${n} exports processing, the limit of its pending_exports quota. Retry once one has completed, expected at ${at}`,
  export_files: (n, at) =>
    `This API key has ${n} export files kept or being written, the limit of its export_files quota (a file is kept 24 hours after completion). The oldest expires at ${at}`,
};

/**
 * 429 QUOTA_EXCEEDED `{quota, limit, current, reset_at}`: the key holds `current` of what the
 * quota counts, its limit is `limit`, and a place should free up at `reset_at` (also sent as
 * Retry-After, in seconds).
 */
export class QuotaExceededError extends DomainError {
  readonly retryAfterSeconds: number;

  constructor(quota: QuotaName, limit: number, current: number, resetAt: number, now: Date) {
    const reset = Math.max(Math.ceil(resetAt / 1_000) * 1_000, Math.ceil(now.getTime() / 1_000) * 1_000 + 1_000);
    const at = isoSeconds(new Date(reset));
    super('QUOTA_EXCEEDED', MESSAGES[quota](current, at), { quota, limit, current, reset_at: at });
    this.retryAfterSeconds = Math.ceil((reset - now.getTime()) / 1_000);
  }
}
