/**
 * Delivery rules as pure functions and the shapes an attempt is made of (decisions.md, Webhooks,
 * Delivery): which answers succeed, when to retry, how long to wait.
 */
import type { Cidr } from './targets.ts';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** Every delivery status. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

/** Whether `value` is a delivery status. */
export const isDeliveryStatus = (value: unknown): value is DeliveryStatus =>
  (DELIVERY_STATUSES as readonly unknown[]).includes(value);

/** One attempt as the deliveries list shows it: an HTTP status, or why there was none. */
export interface Attempt {
  at: string;
  response_status?: number;
  error?: string;
  duration_ms: number;
}

/** What the sender is asked to do: one POST to `url`, connecting only to an allowed address. */
export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowedCidrs: readonly Cidr[];
  /** Aborted when the service stops: the attempt is then not recorded (and is made again). */
  signal?: AbortSignal;
}

/** How an attempt ended: `status` when an HTTP answer came, else `error` (refused target, timeout, ...). */
export interface SendResult {
  status?: number;
  /** Milliseconds, from a Retry-After header (seconds or an HTTP date). */
  retryAfterMs?: number;
  error?: string;
  durationMs: number;
}

/** Delivers one request: the HTTP adapter (infrastructure/webhooks/httpSender.ts) or a test double. */
export type Sender = (request: SendRequest) => Promise<SendResult>;

export const isSuccess = (result: SendResult): boolean =>
  result.status !== undefined && result.status >= 200 && result.status < 300;

/** Longest Retry-After honoured: a receiver cannot push a retry past the longest scheduled delay. */
export const MAX_RETRY_AFTER_MS = 10 * 3_600_000;

/**
 * The wait before the next attempt after `attemptsMade` attempts (1 after the first), or null when
 * the schedule is exhausted (the delivery fails). Each delay moves by up to `jitter` either way
 * (`random` in [0, 1)); a Retry-After on 429 and 503 is honoured as a minimum.
 */
export const nextDelay = (
  attemptsMade: number,
  delays: readonly number[],
  jitter: number,
  random: () => number,
  result: SendResult,
): number | null => {
  const base = delays[attemptsMade - 1];
  if (base === undefined) return null;
  const delay = Math.round(base * (1 + jitter * (2 * random() - 1)));
  const honoured =
    (result.status === 429 || result.status === 503) && result.retryAfterMs !== undefined
      ? Math.min(result.retryAfterMs, MAX_RETRY_AFTER_MS)
      : 0;
  return Math.max(delay, honoured);
};

/** Retry-After as milliseconds: delta-seconds or an HTTP date (relative to `now`); undefined when unreadable. */
export const parseRetryAfter = (header: string | undefined, now: Date): number | undefined => {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
};
