import fs from 'node:fs';
import path from 'node:path';
import {
  defaultRateLimitConfig,
  isRateLimitGroup,
  RATE_LIMIT_GROUPS,
  type RateLimitConfig,
} from './http/rateLimits.ts';
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from './http/server.ts';

/** Everything the service reads from its environment, read in one place. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: string;
  /** Full keys from VOUCHER_API_KEYS (comma-separated), accepted with all scopes. */
  apiKeys: string[];
  /** Longest wait for read models after a write before answering it. */
  readYourWritesMs: number;
  /** How often the expiry job looks for vouchers whose valid_until has passed. */
  expiryIntervalMs: number;
  /** Per-key, per-group rate limits from RATE_LIMITS / RATE_LIMITS_FILE (see rateLimitsFrom). */
  rateLimits: RateLimitConfig;
  /** The dashboard's operator password (ADMIN_PASSWORD); unset or empty: generated on the first start. */
  adminPassword?: string;
  /** PROJECTORS: `thread` (default) runs the analytics projection group on a worker thread, `inline` on the main thread. */
  projectors: 'thread' | 'inline';
  /** HTTP_*_TIMEOUT_MS and HTTP_MAX_CONNECTIONS: connection timeouts and cap (see serverLimitsFrom). */
  server: ServerLimits;
}

const integer = (raw: string | undefined, fallback: number, name: string): number => {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
};

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => ({
  port: integer(env.PORT, 3000, 'PORT'),
  host: env.HOST ?? '0.0.0.0',
  dataDir: path.resolve(env.DATA_DIR ?? './data'),
  logLevel: env.LOG_LEVEL ?? 'info',
  apiKeys: (env.VOUCHER_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean),
  readYourWritesMs: integer(env.READ_YOUR_WRITES_MS, 5_000, 'READ_YOUR_WRITES_MS'),
  // decisions.md: expiry is recorded within a minute, so the interval is capped at 60 s
  expiryIntervalMs: Math.min(60_000, Math.max(1_000, integer(env.EXPIRY_INTERVAL_MS, 30_000, 'EXPIRY_INTERVAL_MS'))),
  rateLimits: rateLimitsFrom(env),
  adminPassword: env.ADMIN_PASSWORD || undefined,
  projectors: projectorsFrom(env.PROJECTORS),
  server: serverLimitsFrom(env),
});

const projectorsFrom = (raw: string | undefined): Config['projectors'] => {
  if (raw === undefined || raw === '' || raw === 'thread') return 'thread';
  if (raw === 'inline') return 'inline';
  throw new Error(`PROJECTORS must be "thread" or "inline", got "${raw}"`);
};

/** Longest window: the in-memory store sweeps with setInterval, which takes at most 2^31 - 1 ms. */
const MAX_WINDOW_MS = 2_147_483_647;

const parseJson = (text: string, source: string, what: string): unknown => {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${source} is ${what}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
};

/** Lays one JSON object of overrides over `config`, refusing anything it does not understand. */
const overrideRateLimits = (
  config: Extract<RateLimitConfig, { enabled: true }>,
  overrides: unknown,
  source: string,
): void => {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw new Error(
      `${source} must be a JSON object like {"validate": 1000, "window_ms": 60000}, got ${JSON.stringify(overrides)}`,
    );
  }
  for (const [name, value] of Object.entries(overrides)) {
    if (name !== 'window_ms' && !isRateLimitGroup(name)) {
      throw new Error(
        `${source}: unknown rate limit group "${name}" (known: ${RATE_LIMIT_GROUPS.join(', ')}, and window_ms)`,
      );
    }
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      throw new Error(`${source}: "${name}" must be a positive integer, got ${JSON.stringify(value)}`);
    }
    if (name === 'window_ms') {
      if (value > MAX_WINDOW_MS)
        throw new Error(`${source}: "window_ms" must be at most ${MAX_WINDOW_MS}, got ${value}`);
      config.windowMs = value;
    } else {
      config.limits[name as keyof typeof config.limits] = value;
    }
  }
};

/**
 * Rate limits for operators. `RATE_LIMITS=off` turns limiting off (no limiter, no headers: for
 * benchmarks). Otherwise the spec's limits per key and group, overridden by `RATE_LIMITS_FILE`
 * (a JSON file) and then by `RATE_LIMITS` (inline JSON), both of the shape
 * `{"<group>": <requests per window>, ..., "window_ms": <ms>}`: a group left out keeps its
 * default. An unknown group or a value that is not a positive integer is a startup error.
 */
export const rateLimitsFrom = (env: NodeJS.ProcessEnv): RateLimitConfig => {
  const inline = env.RATE_LIMITS?.trim() ?? '';
  if (inline.toLowerCase() === 'off') return { enabled: false };
  const config = defaultRateLimitConfig() as Extract<RateLimitConfig, { enabled: true }>;
  const file = env.RATE_LIMITS_FILE?.trim() ?? '';
  if (file !== '') {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new Error(
        `RATE_LIMITS_FILE ${file} cannot be read: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
    const source = `RATE_LIMITS_FILE ${file}`;
    overrideRateLimits(config, parseJson(text, source, 'not valid JSON'), source);
  }
  if (inline !== '')
    overrideRateLimits(config, parseJson(inline, 'RATE_LIMITS', 'neither "off" nor valid JSON'), 'RATE_LIMITS');
  return config;
};

/**
 * The HTTP server's timeouts and connection cap (src/http/server.ts, docs/decisions/017): each a
 * positive integer, defaulting to DEFAULT_SERVER_LIMITS. Node refuses a headers timeout longer
 * than the request timeout, so that is a start-up error here, naming both variables.
 */
export const serverLimitsFrom = (env: NodeJS.ProcessEnv): ServerLimits => {
  const positive = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 1 || value > MAX_TIMER_MS)
      throw new Error(`${name} must be an integer from 1 to ${MAX_TIMER_MS}, got "${raw}"`);
    return value;
  };
  const limits: ServerLimits = {
    headersTimeoutMs: positive('HTTP_HEADERS_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.headersTimeoutMs),
    requestTimeoutMs: positive('HTTP_REQUEST_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.requestTimeoutMs),
    idleTimeoutMs: positive('HTTP_IDLE_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.idleTimeoutMs),
    keepAliveTimeoutMs: positive('HTTP_KEEP_ALIVE_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs),
    maxConnections: positive('HTTP_MAX_CONNECTIONS', DEFAULT_SERVER_LIMITS.maxConnections),
  };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(
      `HTTP_HEADERS_TIMEOUT_MS (${limits.headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${limits.requestTimeoutMs})`,
    );
  }
  return limits;
};

/** Node's timers take at most 2^31 - 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;
