import type { Request, RequestHandler } from 'express';
import { MemoryStore, rateLimit, type RateLimitInfo, type Store } from 'express-rate-limit';
import type { Logger } from 'pino';
import { isoSeconds } from '../domain/clock.ts';
import { HttpError } from './errors.ts';

/**
 * Endpoint groups: each route names its group, and a key's requests are counted per group
 * (spec, Limits). Routes the spec leaves out (update, delete, rollback, export status and
 * download, webhooks) share `other` (decisions.md: 100 per minute).
 */
export const RATE_LIMIT_GROUPS = [
  'read',
  'create',
  'validate',
  'apply',
  'performance',
  'trends',
  'customers',
  'export',
  'other',
] as const;
export type RateLimitGroup = (typeof RATE_LIMIT_GROUPS)[number];

export const isRateLimitGroup = (value: string): value is RateLimitGroup =>
  (RATE_LIMIT_GROUPS as readonly string[]).includes(value);

/** Requests per key, group and window: the spec's figures. */
export const DEFAULT_RATE_LIMITS: Readonly<Record<RateLimitGroup, number>> = Object.freeze({
  read: 100,
  create: 50,
  validate: 200,
  apply: 100,
  performance: 100,
  trends: 100,
  customers: 50,
  export: 10,
  other: 100,
});
export const DEFAULT_RATE_LIMIT_WINDOW_MS = 60_000;

/** `enabled: false` is `RATE_LIMITS=off`: no limiter runs and no rate limit header is sent. */
export type RateLimitConfig =
  { enabled: false } | { enabled: true; windowMs: number; limits: Record<RateLimitGroup, number> };

export const defaultRateLimitConfig = (): RateLimitConfig => ({
  enabled: true,
  windowMs: DEFAULT_RATE_LIMIT_WINDOW_MS,
  limits: { ...DEFAULT_RATE_LIMITS },
});

/**
 * Where a group's counters live. Called once per group (express-rate-limit refuses one store
 * instance shared by two limiters), so a factory rather than a store.
 *
 * The default keeps counters in this process (`MemoryStore`): with several API instances each
 * counts on its own, so a key could make N × limit requests. For a fleet, pass a factory whose
 * stores share the counters, e.g. a MongoDB store (the `Store` interface: `increment(key)`
 * returning `{totalHits, resetTime}`, `decrement`, `resetKey`; `localKeys: false`) built in
 * composition/main from the production MongoDB client, one collection (or key prefix) per
 * group, a document per key with an atomic `$inc` and a TTL index on the reset time.
 * createApp only takes the factory; nothing here changes.
 */
export type RateLimitStoreFactory = (group: RateLimitGroup) => Store;
export const memoryStores: RateLimitStoreFactory = () => new MemoryStore();

/** Gives the limiter middleware of a group. Limiters are built once, at app start. */
export type RateLimiter = (group: RateLimitGroup) => RequestHandler;

const pass: RequestHandler = (_req, _res, next) => {
  next();
};

/** The reset as the header gives it: Unix seconds, rounded up. */
const resetSeconds = (info: RateLimitInfo | undefined, windowMs: number): number =>
  Math.ceil((info?.resetTime?.getTime() ?? Date.now() + windowMs) / 1000);

/**
 * Per API key (`req.apiKey.id`, so it runs after `authenticate`) and per endpoint group.
 * Every answer of a limited endpoint carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
 * `X-RateLimit-Reset` (Unix seconds); over the limit: 429 RATE_LIMIT_EXCEEDED
 * `{limit, reset_at}` with `Retry-After` (seconds), through the common error handler.
 * Counters follow the wall clock (Date.now(), as express-rate-limit does), not the service Clock.
 */
export const createRateLimiter = (
  config: RateLimitConfig,
  storeFor: RateLimitStoreFactory = memoryStores,
  logger?: Logger,
): RateLimiter => {
  if (!config.enabled) return () => pass;
  const { windowMs } = config;
  const built = new Map<RateLimitGroup, RequestHandler>();
  const build = (group: RateLimitGroup): RequestHandler =>
    rateLimit({
      windowMs,
      limit: config.limits[group],
      legacyHeaders: true,
      standardHeaders: false,
      store: storeFor(group),
      keyGenerator: (req: Request) => req.apiKey.id,
      // A shared store that is down must not take the API down with it: the request passes, logged.
      passOnStoreError: true,
      ...(logger
        ? {
            logger: {
              error: (err: unknown, msg?: string) => logger.error({ err }, msg),
              warn: (err: unknown, msg?: string) => logger.warn({ err }, msg),
            },
          }
        : {}),
      handler: (req, _res, next) => {
        const info = (req as Request & { rateLimit?: RateLimitInfo }).rateLimit;
        const limit = info?.limit ?? config.limits[group];
        const resetAt = isoSeconds(new Date(resetSeconds(info, windowMs) * 1000));
        next(
          new HttpError(
            'RATE_LIMIT_EXCEEDED',
            `Rate limit exceeded: this API key may make ${limit} ${group} requests per ${windowMs / 1000} s; try again after ${resetAt}`,
            { limit, reset_at: resetAt },
          ),
        );
      },
    });
  return (group) => {
    let limiter = built.get(group);
    if (!limiter) built.set(group, (limiter = build(group)));
    return limiter;
  };
};
