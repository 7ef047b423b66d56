/**
 * The voucher scenarios: the service's API key for the run, the vouchers' codes and bodies, and the
 * request body of every scenario (pre-serialised, so the load generator spends little CPU per request).
 */
import { randomBytes } from 'node:crypto';
import { isoSeconds } from '../../src/domain/clock.ts';
import { HOST, RATE_LIMITS } from './cli.ts';

export const VALIDATE_POOL = 100;
export const SPREAD_POOL = 1_000;

export interface Target {
  ratio: number;
}
export interface Scenario {
  id: string;
  /** Which voucher pool the scenario needs. */
  pool: 'validate' | 'spread' | 'hot';
  title: string;
  path: string;
  target?: Target;
  /** Builds the body of the n-th request (n counts across all connections). */
  body(n: number): string;
}

export const RUN = randomBytes(4).toString('hex');
export const API_KEY = `sk_test_${randomBytes(24)
  .toString('base64url')
  .replace(/[^A-Za-z0-9]/g, '')
  .padEnd(32, '0')
  .slice(0, 32)}`;
export const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };

/** A quota no bench run reaches (see serviceEnv). */
export const LIFTED_QUOTA = String(1_000_000_000);

/**
 * The environment of a service the bench starts: on 127.0.0.1 at `port`, on `dataDir`, with the
 * bench's API key, warnings only, and the rate limits of --rate-limits. One key makes thousands of
 * requests a second here: with the spec's limits the scenarios would measure the limiter's 429s
 * instead of the service, so the limits are lifted (the limiter and its headers still run, as in
 * production), or the limiter is off with --rate-limits=off. The per-key quota of outstanding
 * quotes (src/application/quotas.ts, 1,000 by default) is lifted the same way: validate with
 * `order.id` keeps a quote per request, so `validate-quote` would otherwise measure 429
 * QUOTA_EXCEEDED answers after its first thousand requests; the quota's count still runs.
 */
export const serviceEnv = (
  port: number,
  dataDir: string,
  extra: Record<string, string> = {},
): Record<string, string> => ({
  PORT: String(port),
  HOST,
  DATA_DIR: dataDir,
  VOUCHER_API_KEYS: API_KEY,
  LOG_LEVEL: 'warn',
  RATE_LIMITS,
  QUOTA_OUTSTANDING_QUOTES: LIFTED_QUOTA,
  ...extra,
});

const ITEMS = [
  { id: 'sku_shoes', price: 5_000, quantity: 1, category: 'footwear' },
  { id: 'sku_socks', price: 800, quantity: 3, category: 'apparel' },
  { id: 'sku_cap', price: 1_500, quantity: 2, category: 'apparel' },
];
const ORDER_VALUE = 5_000 + 2_400 + 3_000 + 700; // items plus shipping
const ORDER = { value: ORDER_VALUE, currency: 'USD', items: ITEMS };

const iso = (msFromNow: number) => isoSeconds(new Date(Date.now() + msFromNow));

/** A percentage or fixed voucher with a few conditions that the bench orders all meet. */
export const voucherBody = (code: string, i: number, withMaxUses: boolean): Record<string, unknown> => {
  const conditions: Record<string, unknown> = {};
  if (i % 2 === 0) conditions.min_order_value = 5_000;
  if (i % 3 === 0) {
    conditions.valid_from = iso(-86_400_000);
    conditions.valid_until = iso(30 * 86_400_000);
  }
  if (i % 5 === 1) conditions.product_ids = ['sku_shoes', 'sku_cap'];
  if (i % 5 === 2) conditions.excluded_product_ids = ['sku_socks'];
  if (withMaxUses && i % 7 === 0) conditions.max_uses = 1_000_000;
  const percentage = i % 2 === 0;
  return {
    code,
    type: percentage ? 'percentage' : 'fixed',
    value: percentage ? 5 + (i % 20) : 100 + (i % 10) * 50,
    ...(i % 4 === 0 ? { currency: 'USD' } : {}),
    conditions,
  };
};

export const validateCode = (i: number) => `BV${RUN}${String(i).padStart(3, '0')}`;
export const spreadCode = (i: number) => `BA${RUN}${String(i).padStart(4, '0')}`;
export const HOT_CODE = `BHOT${RUN}`;

// Pre-serialised pieces, so the load generator spends little CPU per request.
const ORDER_JSON = JSON.stringify(ORDER);
const validateBodies = Array.from({ length: VALIDATE_POOL }, (_, i) =>
  JSON.stringify({ code: validateCode(i), order: ORDER, customer: { id: `cus_${i}`, segment: 'regular' } }),
);
const spreadPrefixes = Array.from(
  { length: SPREAD_POOL },
  (_, i) => `{"code":"${spreadCode(i)}","order_id":"ord_${RUN}_`,
);
const hotPrefix = `{"code":"${HOT_CODE}","order_id":"ord_${RUN}_hot_`;
const orderSuffix = `","order":${ORDER_JSON}}`;

export const SCENARIOS: Scenario[] = [
  {
    id: 'validate',
    pool: 'validate',
    title: `validate (${VALIDATE_POOL} vouchers)`,
    path: '/v1/vouchers/validate',
    target: { ratio: 0.6 },
    body: (n) => validateBodies[n % VALIDATE_POOL]!,
  },
  {
    id: 'apply-spread',
    pool: 'spread',
    title: `apply spread (${SPREAD_POOL} vouchers)`,
    path: '/v1/vouchers/apply',
    target: { ratio: 0.4 },
    body: (n) => `${spreadPrefixes[n % SPREAD_POOL]}${n}${orderSuffix}`,
  },
  {
    id: 'apply-hot',
    pool: 'hot',
    title: 'apply hot (1 voucher)',
    path: '/v1/vouchers/apply',
    target: { ratio: 0.3 },
    body: (n) => `${hotPrefix}${n}${orderSuffix}`,
  },
  {
    // No target: shows what keeping a quote (order.id on validate) costs over plain validate.
    id: 'validate-quote',
    pool: 'validate',
    title: 'validate + quote (order.id)',
    path: '/v1/vouchers/validate',
    body: (n) => `{"code":"${validateCode(n % VALIDATE_POOL)}","order":{"id":"q_${RUN}_${n}",${ORDER_JSON.slice(1)}}`,
  },
];

/** The bare express app's one route, with the same bodies as `validate`: every ratio's base. */
export const CEILING_SCENARIO: Pick<Scenario, 'id' | 'title' | 'path' | 'body'> = {
  id: 'ceiling',
  title: 'ceiling (bare express)',
  path: '/ceiling',
  body: (n) => validateBodies[n % VALIDATE_POOL]!,
};
/** The same route on the service's HTTP server (src/http/server.ts): see scripts/bench/ceiling.ts. */
export const TUNED_CEILING_SCENARIO: Pick<Scenario, 'id' | 'title' | 'path' | 'body'> = {
  ...CEILING_SCENARIO,
  id: 'tuned-ceiling',
  title: 'tuned ceiling (bare express, createHttpServer)',
};
/**
 * The same route, answering once the request's body is written and synced with group commit
 * (CEILING_SYNC_FILE in scripts/bench/ceiling.ts): the least a durable write waits on this disk.
 */
export const DURABLE_CEILING_SCENARIO: Pick<Scenario, 'id' | 'title' | 'path' | 'body'> = {
  ...CEILING_SCENARIO,
  id: 'durable-ceiling',
  title: 'bare route + fsync (group commit)',
};
