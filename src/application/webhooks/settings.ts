import type { Cidr } from '../../domain/webhooks/targets.ts';

/** The retry schedule of decisions.md: about 28 hours in all, then the delivery fails. */
export const DEFAULT_RETRY_DELAYS_MS = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];
export const DEFAULT_TIMEOUT_MS = 15_000;
/** The longest an event's deliveries wait while the service's request thread is saturated (decision 075). */
export const DEFAULT_MAX_DEFER_MS = 5_000;
/** Attempts in flight at once to one endpoint (different vouchers; one voucher has at most one). */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 8;
/** An endpoint whose deliveries have all failed for this long is disabled. */
export const FAILING_DISABLE_MS = 5 * 24 * 3_600_000;
/** Each retry delay is moved by up to this fraction, either way. */
export const JITTER = 0.2;

/** The operator's webhook settings (WEBHOOK_* variables, config.ts). */
export interface WebhookSettings {
  /** CIDRs allowed despite the refused ranges (WEBHOOK_ALLOWED_CIDRS). */
  allowedCidrs: Cidr[];
  /** Delays before the 2nd, 3rd, ... attempt (WEBHOOK_RETRY_DELAYS); after the last, the delivery fails. */
  retryDelaysMs: number[];
  /** An attempt not answered within this is a failure (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** The longest an event's deliveries are held back while the request thread is saturated (WEBHOOK_MAX_DEFER_MS; 0 or unset: never). */
  maxDeferMs?: number;
}

export const defaultWebhookSettings = (): WebhookSettings => ({
  allowedCidrs: [],
  retryDelaysMs: [...DEFAULT_RETRY_DELAYS_MS],
  timeoutMs: DEFAULT_TIMEOUT_MS,
  maxDeferMs: DEFAULT_MAX_DEFER_MS,
});

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `1s,2s,500ms,5m` → milliseconds; throws naming the entry it cannot read. */
export const parseDurations = (raw: string): number[] => {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('must list at least one duration such as 1s,2s,5s');
  return entries.map((entry) => {
    const match = /^(\d+)(ms|s|m|h|d)$/.exec(entry);
    if (!match) throw new Error(`"${entry}" is not a duration such as 500ms, 5s, 5m, 2h or 1d`);
    return Number(match[1]) * UNITS[match[2]!]!;
  });
};
