/**
 * The service under fuzz: a CHILD process (`node --import tsx src/main.ts`) on 127.0.0.1, a free
 * port and a fresh temp DATA_DIR, with three keys (sandbox and production with every scope from
 * VOUCHER_API_KEYS, and a stored sandbox key that may only redeem), and the vouchers, application
 * and export the generated requests refer to. `stopService` stops the child and removes the dir;
 * the CLI (scripts/fuzz.ts) also does so on SIGINT/SIGTERM, the test in an `after` hook.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openAccount } from '../../src/composition.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { RATE_LIMIT_GROUPS } from '../../src/http/rateLimits.ts';
import { freePort, spawnNode, stopProcess, waitForHealth, type Proc } from '../lib/processes.ts';
import type { Refs } from './body.ts';
import type { KeyName } from './requests.ts';

export const HOST = '127.0.0.1';

/** Server timeouts in ms, given to the service as HTTP_HEADERS_TIMEOUT_MS and the like (src/config.ts). */
export interface ServerTimeouts {
  headersMs: number;
  requestMs: number;
  idleMs: number;
  keepAliveMs: number;
}

/**
 * The timeouts `npm run fuzz` gives the service by default (`--timeouts=short`): short, so that a
 * run of a minute sees its slow sockets closed; `--timeouts=default` leaves the service's own.
 */
export const SHORT_TIMEOUTS: ServerTimeouts = { headersMs: 2_000, requestMs: 4_000, idleMs: 6_000, keepAliveMs: 2_000 };

/**
 * How long a slow socket may stay open under `timeouts`: the longest of them, the idle timeout
 * twice (Node lets a socket whose last write was still moving wait one more period), plus Node's
 * 1 s check interval and a margin.
 */
export const socketDeadlineFor = (timeouts: ServerTimeouts): number =>
  Math.max(timeouts.headersMs, timeouts.requestMs, 2 * timeouts.idleMs, timeouts.keepAliveMs + 1_000) + 4_000;

const timeoutEnv = (t: ServerTimeouts): Record<string, string> => ({
  HTTP_HEADERS_TIMEOUT_MS: String(t.headersMs),
  HTTP_REQUEST_TIMEOUT_MS: String(t.requestMs),
  HTTP_IDLE_TIMEOUT_MS: String(t.idleMs),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: String(t.keepAliveMs),
});

export interface Service {
  proc: Proc;
  host: string;
  port: number;
  baseUrl: string;
  dataDir: string;
  keys: Record<KeyName, string>;
  refs: Refs;
  /** Whether this run removes DATA_DIR when it stops (not with --keep-data). */
  removeDataDir: boolean;
}

export interface ServiceOptions {
  /** The checkout whose src/main.ts runs (default: this one). */
  root: string;
  /** Timeouts given to the service; 'default': none given (the service's own). */
  timeouts: ServerTimeouts | 'default';
  keepData?: boolean;
}

const base62 = (n: number): string => {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return [...randomBytes(n)].map((b) => alphabet[b % 62]).join('');
};

/** The stored key that may only redeem, written before the service starts (it loads it). */
const createRedeemKey = async (dataDir: string): Promise<string> => {
  const { account, keys } = await openAccount(dataDir, systemClock);
  try {
    return (await keys.create('sandbox', 'fuzz redeem only', ['vouchers:redeem'], 'fuzz')).key;
  } finally {
    await account.events.close();
    await account.kv.close();
  }
};

/** Every rate limit group far above what a run sends: the limiter still runs, its 429s do not drown the run. */
const LIFTED_RATE_LIMITS = JSON.stringify(Object.fromEntries(RATE_LIMIT_GROUPS.map((g) => [g, 1_000_000_000])));

/** Starts the service and waits for /health (at most 30 s). */
export const startService = async (options: ServiceOptions): Promise<Service> => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-fuzz-'));
  try {
    const keys: Record<KeyName, string> = {
      sandbox: `sk_test_${base62(32)}`,
      production: `sk_live_${base62(32)}`,
      redeem: await createRedeemKey(dataDir),
    };
    const port = await freePort(HOST);
    const proc = spawnNode(['src/main.ts'], {
      name: 'service',
      cwd: options.root,
      keepChunks: 2_000,
      env: {
        PORT: String(port),
        HOST,
        DATA_DIR: dataDir,
        VOUCHER_API_KEYS: `${keys.sandbox},${keys.production}`,
        ADMIN_PASSWORD: `fuzz-${base62(16)}`,
        LOG_LEVEL: 'error',
        RATE_LIMITS: LIFTED_RATE_LIMITS,
        // webhooks (where the service has them) to the loopback only: the URLs requests give are
        // loopback literals (requests.ts), allowed here so endpoints can be made; nothing leaves
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32,::1/128',
        ...(options.timeouts === 'default' ? {} : timeoutEnv(options.timeouts)),
      },
    });
    const baseUrl = `http://${HOST}:${port}`;
    const service: Service = {
      proc,
      host: HOST,
      port,
      baseUrl,
      dataDir,
      keys,
      refs: {},
      removeDataDir: !options.keepData,
    };
    try {
      await waitForHealth(proc, baseUrl, { timeoutMs: 30_000, requestTimeoutMs: 2_000 });
    } catch (error) {
      await stopService(service);
      throw error;
    }
    return service;
  } catch (error) {
    if (!options.keepData) fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
};

/** SIGTERM (SIGKILL after 5 s), then DATA_DIR removed unless kept. Safe to call twice. */
export const stopService = async (service: Service): Promise<void> => {
  await stopProcess(service.proc, 5_000);
  if (service.removeDataDir) fs.rmSync(service.dataDir, { recursive: true, force: true });
};

/** The resident set of a process in bytes (Linux /proc; elsewhere `ps`); undefined once it is gone. */
export const rssOf = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
};

// ---- what the requests refer to ---------------------------------------------------------------

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- setup reads the API's JSON answers loosely
type Json = any;

const call = async (service: Service, key: KeyName, method: string, urlPath: string, body?: unknown) => {
  const res = await fetch(`${service.baseUrl}${urlPath}`, {
    method,
    headers: { Authorization: `Bearer ${service.keys[key]}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`setup: ${method} ${urlPath} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as Json;
};

/** One voucher of every type, with conditions and rules, that valid requests can reach. */
export const SANDBOX_VOUCHERS: Array<Record<string, unknown>> = [
  { code: 'FUZZ_PCT', type: 'percentage', value: 10 },
  {
    code: 'FUZZ_FIXED',
    type: 'fixed',
    value: 100,
    currency: 'USD',
    conditions: { min_order_value: 500, product_ids: ['p1', 'p2'], excluded_product_ids: ['p3'] },
  },
  {
    code: 'FUZZ_LIMITED',
    type: 'percentage',
    value: 25.5,
    conditions: {
      max_uses: 5,
      customer_limit: 1,
      valid_from: '2020-01-01T00:00:00Z',
      valid_until: '2099-12-31T23:59:59Z',
    },
  },
  { code: 'FUZZ_BOGO', type: 'bogo', config: { buy_quantity: 1, get_quantity: 1, applicable_items: ['p1'] } },
  {
    code: 'FUZZ_TIERED',
    type: 'tiered',
    config: {
      tiers: [
        { min_value: 0, max_value: 9_999, discount: 5, discount_type: 'percentage' },
        { min_value: 10_000, max_value: null, discount: 1_000, discount_type: 'fixed' },
      ],
    },
  },
  {
    code: 'FUZZ_COND',
    type: 'conditional',
    config: {
      conditions: [
        { type: 'customer_segment', operator: 'eq', value: 'vip' },
        { type: 'order_value', operator: 'gte', value: 1_000 },
      ],
      discount: 15,
      discount_type: 'percentage',
      all_conditions_required: false,
    },
  },
  {
    code: 'FUZZ_STACK',
    type: 'stackable',
    config: {
      base_discount: 5,
      base_discount_type: 'percentage',
      stack_rules: { max_stack_count: 3, max_total_discount: 50 },
      priority: 1,
    },
  },
  {
    code: 'FUZZ_RULES',
    type: 'fixed',
    value: 200,
    validation_rules: [
      { type: 'order_value', operator: 'gte', value: 300 },
      { type: 'items', rules: [{ item_id: 'p1', min_quantity: 1 }] },
      { type: 'customer', rules: [{ segment: 'vip', min_orders: 1 }] },
    ],
  },
];

/** Creates the vouchers, one application and one export; fills `service.refs`. */
export const seedService = async (service: Service): Promise<void> => {
  const vouchers: Json[] = [];
  for (const body of SANDBOX_VOUCHERS) vouchers.push(await call(service, 'sandbox', 'POST', '/v1/vouchers', body));
  for (const n of [1, 2, 3])
    await call(service, 'production', 'POST', '/v1/vouchers', { code: `FUZZ_PROD_${n}`, type: 'percentage', value: n });
  const application = await call(service, 'sandbox', 'POST', '/v1/vouchers/apply', {
    code: 'FUZZ_PCT',
    order_id: 'order-setup',
    order: { value: 5_000, items: [{ id: 'p1', price: 2_500, quantity: 2 }] },
    customer: { id: 'cust-setup', segment: 'vip' },
  });
  const exported = await call(service, 'sandbox', 'POST', '/v1/analytics/export', {
    voucher_ids: [vouchers[0].id],
    metrics: ['uses'],
    format: 'json',
  });
  service.refs = {
    voucher: vouchers.map((v) => String(v.id)),
    code: SANDBOX_VOUCHERS.map((v) => String(v.code)),
    application: [String(application.id)],
    export: [String(exported.id ?? exported.export_id)],
  };
};
