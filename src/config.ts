import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  defaultRateLimitConfig,
  isRateLimitGroup,
  RATE_LIMIT_GROUPS,
  type RateLimitConfig,
} from './http/rateLimits.ts';
import { DEFAULT_QUOTAS, QUOTAS, type Quotas } from './application/quotas.ts';
import { DEFAULT_SNAPSHOT_EVERY } from './core/snapshotStore.ts';
import { APPLY_MODES, type ApplyMode } from './application/context.ts';
import type { TrustProxy } from './http/addresses.ts';
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from './http/server.ts';
import {
  DEFAULT_MAX_DEFER_MS,
  defaultWebhookSettings,
  parseDurations,
  type WebhookSettings,
} from './application/webhooks/settings.ts';
import { parseCidrs } from './domain/webhooks/targets.ts';
import { DEFAULT_PROJECTOR_GATHER_MS } from './infrastructure/projector/projectorThread.ts';
import { DEFAULT_SNAPSHOT_GATHER_MS } from './infrastructure/snapshots/snapshotWriterThread.ts';
import { assertMongoUrl, databaseBaseName } from './infrastructure/mongo/mongoUrl.ts';
import { DEFAULT_OPS_SETTINGS, type OpsSettings } from './http/ops.ts';

/**
 * What one process runs (ROLE): `all` everything (the default); `api` the HTTP API and command
 * handlers; `projector` the projection groups; `publisher` the webhook publisher (log →
 * deliveries, or → the Kafka topic); `dispatcher` the webhook attempts. Roles other than `all`
 * need EVENTSTORE_URL and MONGODB_URL and serve only the operator's endpoints, except `api`
 * (decisions 053, 056).
 */
export const ROLES = ['all', 'api', 'projector', 'publisher', 'dispatcher'] as const;
export type Role = (typeof ROLES)[number];

/** Everything the service reads from its environment, read in one place. */
export interface Config {
  /** ROLE (see ROLES). */
  role: Role;
  port: number;
  host: string;
  // --- addresses the service is reached at (TRUST_PROXY, PUBLIC_BASE_URL) ---
  /** express's `trust proxy` (TRUST_PROXY): false, a hop count, or addresses/subnets of trusted proxies. */
  trustProxy: TrustProxy;
  /** PUBLIC_BASE_URL without a trailing slash (absolute links such as `download_url`); unset: the listen address. */
  publicBaseUrl?: string;
  // --- end of addresses ---
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
  /** Per-API-key quotas on stored quotes and exports (QUOTA_*; see quotasFrom). */
  quotas: Quotas;

  /** HTTP_*_TIMEOUT_MS and HTTP_MAX_CONNECTIONS: connection timeouts and cap (see serverLimitsFrom). */
  server: ServerLimits;

  /** Webhook delivery (WEBHOOK_ALLOWED_CIDRS, WEBHOOK_RETRY_DELAYS, WEBHOOK_TIMEOUT_MS; see webhooksFrom). */
  webhooks: WebhookSettings;

  /** The Kafka bus (KAFKA_BROKERS, KAFKA_PARTITIONS, KAFKA_REPLICATION; see kafkaFrom); unset: the in-memory bus. */
  kafka?: KafkaSettings;
  /** MONGODB_URL (see mongodbUrlFrom); unset: read models and key-value records stay in the embedded SQLite stores. */
  mongodbUrl?: string;
  /** EVENTSTORE_URL (see eventstoreUrlFrom); unset: the events stay in the embedded SQLite stores. */
  eventstoreUrl?: string;
  /** METRICS (`on`, `off`): request metrics and `GET /metrics`. */
  metrics: boolean;
  /** READY_MAX_PROJECTOR_LAG and METRICS_TOKEN (see opsFrom). */
  ops: OpsSettings;
  /** APPLY_MODE: how apply writes the voucher and order streams; unset: as the event store allows. */
  applyMode?: ApplyMode;
  /** SNAPSHOT_EVERY: events between two snapshots of a voucher (0: none; default 100; decision 059). */
  snapshotEvery: number;
  /** WEBHOOK_DELIVERY: `thread` (default) runs each environment's webhook publisher and dispatcher on a worker thread, `inline` on the main thread. */
  webhookDelivery: 'thread' | 'inline';
  /** EVENT_STORE_WRITER: `thread` (default) commits the SQLite event stores' appends on a writer thread, which also folds each commit into the core read models (decisions 065, 087); `inline`: both on the main thread. */
  eventStoreWriter: 'thread' | 'inline';
  /** PROJECTOR_GATHER_MS: how long the commits the analytics group is handed are gathered to fold them together, 0 to 1000 ms (default 25; decisions 103, 111). */
  projectorGatherMs: number;
  /** SNAPSHOT_WRITER: `thread` (default) writes the SQLite snapshots on the snapshot writer thread, `inline` on the main thread (decision 093). */
  snapshotWriter: 'thread' | 'inline';
  /** SNAPSHOT_GATHER_MS: how long a snapshot store gathers its saves to hand them to the snapshot writer thread as one window, 0 to 1000 ms (default 25; decision 112). */
  snapshotGatherMs: number;
  /**
   * HEAP_GROWING_PERCENT: how far V8 lets the JavaScript heap grow past what the last full garbage
   * collection left before the next one, in percent: 0 to 1000, default 60; 0 leaves it to V8's
   * heuristic, which lets the heap grow by up to 300 %. Decisions 064 and 106.
   */
  heapGrowingPercent: number;
}

const integer = (raw: string | undefined, fallback: number, name: string): number => {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
};

// --- addresses the service is reached at -------------------------------------------------------

const NAMED_SUBNETS = ['loopback', 'linklocal', 'uniquelocal'];

/** An address, `address/bits`, `ipv4/netmask` or a name express knows (loopback, linklocal, uniquelocal). */
const isTrustEntry = (entry: string): boolean => {
  if (NAMED_SUBNETS.includes(entry)) return true;
  const [address = '', range, ...rest] = entry.split('/');
  const family = net.isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (/^\d{1,3}$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  return family === 4 && net.isIPv4(range);
};

/**
 * TRUST_PROXY, with express's meaning: unset, empty, `false` or `0`: off (the connection's address
 * is the client's; X-Forwarded-* headers are ignored); a positive integer: that many proxies in
 * front of the service; otherwise a comma-separated list of the proxies' addresses or subnets
 * (`10.0.0.1`, `10.0.0.0/8`, `fd00::/8`, `loopback`, `linklocal`, `uniquelocal`). `true` is refused:
 * it would take the client's address from a header any client can write.
 */
export const trustProxyFrom = (raw: string | undefined): TrustProxy => {
  const value = raw?.trim() ?? '';
  if (value === '' || value.toLowerCase() === 'false' || value === '0') return false;
  if (value.toLowerCase() === 'true') {
    throw new Error(
      'TRUST_PROXY=true would trust an X-Forwarded-For header any client can send; give the number of proxies in front of the service (e.g. 1) or their addresses (e.g. 10.0.0.0/8)',
    );
  }
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (!Number.isSafeInteger(hops)) throw new Error(`TRUST_PROXY hop count is too large, got "${raw}"`);
    return hops;
  }
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const bad = entries.filter((entry) => !isTrustEntry(entry));
  if (bad.length > 0) {
    throw new Error(
      `TRUST_PROXY must be false, a number of proxies, or a comma-separated list of proxy addresses or subnets (e.g. 10.0.0.1, 10.0.0.0/8, loopback); not understood: ${bad.map((b) => `"${b}"`).join(', ')}`,
    );
  }
  return entries;
};

/**
 * PUBLIC_BASE_URL: the service's root URL as its clients reach it (`https://vouchers.example.com`,
 * or with a path prefix a proxy adds), without `/v1`. Absolute links the API gives out
 * (`download_url`) start with it. Unset: the listen address (service.ts).
 */
export const publicBaseUrlFrom = (raw: string | undefined): string | undefined => {
  const value = raw?.trim() ?? '';
  if (value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(
      `PUBLIC_BASE_URL must be an absolute http(s) URL such as https://vouchers.example.com, got "${raw}"`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`PUBLIC_BASE_URL must start with http:// or https://, got "${raw}"`);
  if (url.username || url.password || url.search || url.hash)
    throw new Error(`PUBLIC_BASE_URL must not carry credentials, a query or a fragment, got "${raw}"`);
  const base = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  if (/\/v1$/i.test(base))
    throw new Error(`PUBLIC_BASE_URL is the service's root URL, without /v1 (the API adds it), got "${raw}"`);
  return base;
};

// --- end of addresses ----------------------------------------------------------------------------

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => ({
  role: roleFrom(env),
  port: integer(env.PORT, 3000, 'PORT'),
  host: env.HOST ?? '0.0.0.0',
  trustProxy: trustProxyFrom(env.TRUST_PROXY),
  publicBaseUrl: publicBaseUrlFrom(env.PUBLIC_BASE_URL),
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
  quotas: quotasFrom(env),
  kafka: kafkaFrom(env),

  server: serverLimitsFrom(env),
  webhooks: webhooksFrom(env),
  mongodbUrl: mongodbUrlFrom(env.MONGODB_URL),
  eventstoreUrl: eventstoreUrlFrom(env.EVENTSTORE_URL),

  metrics: metricsFrom(env.METRICS),
  ops: opsFrom(env),
  applyMode: applyModeFrom(env.APPLY_MODE),
  webhookDelivery: threadOrInline(env.WEBHOOK_DELIVERY, 'WEBHOOK_DELIVERY'),
  eventStoreWriter: threadOrInline(env.EVENT_STORE_WRITER, 'EVENT_STORE_WRITER'),
  projectorGatherMs: integerUpTo(env.PROJECTOR_GATHER_MS, DEFAULT_PROJECTOR_GATHER_MS, 1_000, 'PROJECTOR_GATHER_MS'),
  snapshotWriter: threadOrInline(env.SNAPSHOT_WRITER, 'SNAPSHOT_WRITER'),
  snapshotGatherMs: integerUpTo(env.SNAPSHOT_GATHER_MS, DEFAULT_SNAPSHOT_GATHER_MS, 1_000, 'SNAPSHOT_GATHER_MS'),
  snapshotEvery: integer(env.SNAPSHOT_EVERY, DEFAULT_SNAPSHOT_EVERY, 'SNAPSHOT_EVERY'),
  heapGrowingPercent: heapGrowingPercentFrom(env.HEAP_GROWING_PERCENT),
});

/** A whole number from 0 to `max` (`integer` with an upper bound). */
const integerUpTo = (raw: string | undefined, fallback: number, max: number, name: string): number => {
  const value = integer(raw, fallback, name);
  if (value > max) throw new Error(`${name} must be at most ${max}, got "${raw}"`);
  return value;
};

/** The default of HEAP_GROWING_PERCENT (decisions 064 and 106). */
export const DEFAULT_HEAP_GROWING_PERCENT = 60;

/** HEAP_GROWING_PERCENT: a whole number from 0 to 1000 (0: V8's own heuristic). */
const heapGrowingPercentFrom = (raw: string | undefined): number =>
  integerUpTo(raw, DEFAULT_HEAP_GROWING_PERCENT, 1000, 'HEAP_GROWING_PERCENT');

/**
 * ROLE: one of ROLES (default `all`). Any other role shares the stores with other processes, so
 * it needs both servers: the embedded SQLite files are one process's.
 */
export const roleFrom = (env: NodeJS.ProcessEnv): Role => {
  const raw = env.ROLE?.trim() ?? '';
  if (raw === '' || raw === 'all') return 'all';
  if (!(ROLES as readonly string[]).includes(raw))
    throw new Error(`ROLE must be one of ${ROLES.join(', ')}, got "${raw}"`);
  if (!env.EVENTSTORE_URL || !env.MONGODB_URL)
    throw new Error(
      `ROLE=${raw} needs EVENTSTORE_URL and MONGODB_URL: the embedded SQLite files are one process's (use ROLE=all without servers)`,
    );
  return raw as Role;
};

// ---- Operations endpoints -------------------------------------------------------------------

const metricsFrom = (raw: string | undefined): boolean => {
  const value = raw?.trim().toLowerCase() ?? '';
  if (value === '' || value === 'on') return true;
  if (value === 'off') return false;
  throw new Error(`METRICS must be "on" or "off", got "${raw}"`);
};

/**
 * READY_MAX_PROJECTOR_LAG: how many positions the core projection group may be behind the event
 * store's head before `/readyz` answers 503 (a non-negative integer, default 1000).
 * METRICS_TOKEN: when set, `GET /metrics` needs `Authorization: Bearer <token>`; at least 16
 * characters of letters, digits and `-._~+/=` (what a Bearer token may hold).
 */
export const opsFrom = (env: NodeJS.ProcessEnv): OpsSettings => {
  const settings: OpsSettings = {
    ...DEFAULT_OPS_SETTINGS,
    readyMaxProjectorLag: integer(
      env.READY_MAX_PROJECTOR_LAG,
      DEFAULT_OPS_SETTINGS.readyMaxProjectorLag,
      'READY_MAX_PROJECTOR_LAG',
    ),
  };
  const token = env.METRICS_TOKEN ?? '';
  if (token !== '') {
    if (!/^[A-Za-z0-9\-._~+/]{16,}=*$/.test(token))
      throw new Error(
        'METRICS_TOKEN must be at least 16 characters of letters, digits and -._~+/ (a Bearer token); the value is not shown',
      );
    settings.metricsToken = token;
  }
  return settings;
};

const applyModeFrom = (raw: string | undefined): ApplyMode | undefined => {
  if (raw === undefined || raw === '') return undefined;
  if ((APPLY_MODES as readonly string[]).includes(raw)) return raw as ApplyMode;
  throw new Error(`APPLY_MODE must be "atomic" or "two-append", got "${raw}"`);
};

const threadOrInline = (raw: string | undefined, name: string): 'thread' | 'inline' => {
  if (raw === undefined || raw === '' || raw === 'thread') return 'thread';
  if (raw === 'inline') return 'inline';
  throw new Error(`${name} must be "thread" or "inline", got "${raw}"`);
};

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

// ---- Per-key quotas -------------------------------------------------------------------------

/**
 * Per-API-key quotas from QUOTA_OUTSTANDING_QUOTES, QUOTA_PENDING_EXPORTS and QUOTA_EXPORT_FILES:
 * each a positive integer (a quota of 0 would refuse every such request); unset or empty keeps
 * the default (DEFAULT_QUOTAS).
 */
export const quotasFrom = (env: NodeJS.ProcessEnv): Quotas => {
  const quotas = { ...DEFAULT_QUOTAS };
  for (const { member, variable } of Object.values(QUOTAS)) {
    const raw = env[variable];
    if (raw === undefined || raw.trim() === '') continue;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`${variable} must be a positive integer (a count per API key), got "${raw}"`);
    }
    quotas[member] = value;
  }
  return quotas;
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

// ---- Webhooks -------------------------------------------------------------------------------

/**
 * WEBHOOK_ALLOWED_CIDRS: comma-separated CIDRs delivered to despite the refused ranges (for example
 * `10.0.0.0/8` for receivers on the private network); WEBHOOK_RETRY_DELAYS: comma-separated
 * durations (`500ms`, `5s`, `5m`, `2h`, `1d`) replacing the retry schedule, after the last of
 * which a delivery fails; WEBHOOK_TIMEOUT_MS: how long an attempt may take (default 15000);
 * WEBHOOK_MAX_DEFER_MS: the longest an event's deliveries are held back while the main thread is
 * saturated (default 5000, 0: never; decision 075).
 */
export const webhooksFrom = (env: NodeJS.ProcessEnv): WebhookSettings => {
  const settings = defaultWebhookSettings();
  const cidrs = env.WEBHOOK_ALLOWED_CIDRS?.trim() ?? '';
  if (cidrs !== '') {
    try {
      settings.allowedCidrs = parseCidrs(cidrs);
    } catch (error) {
      throw new Error(`WEBHOOK_ALLOWED_CIDRS: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }
  const delays = env.WEBHOOK_RETRY_DELAYS?.trim() ?? '';
  if (delays !== '') {
    try {
      settings.retryDelaysMs = parseDurations(delays);
    } catch (error) {
      throw new Error(`WEBHOOK_RETRY_DELAYS: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }
  const timeout = integer(env.WEBHOOK_TIMEOUT_MS, settings.timeoutMs, 'WEBHOOK_TIMEOUT_MS');
  if (timeout < 1 || timeout > 60_000)
    throw new Error(`WEBHOOK_TIMEOUT_MS must be between 1 and 60000, got "${env.WEBHOOK_TIMEOUT_MS}"`);
  settings.timeoutMs = timeout;
  const defer = integer(env.WEBHOOK_MAX_DEFER_MS, DEFAULT_MAX_DEFER_MS, 'WEBHOOK_MAX_DEFER_MS');
  if (defer < 0 || defer > 60_000)
    throw new Error(`WEBHOOK_MAX_DEFER_MS must be between 0 and 60000, got "${env.WEBHOOK_MAX_DEFER_MS}"`);
  settings.maxDeferMs = defer;
  return settings;
};

// ---- Kafka ------------------------------------------------------------------------------------

export interface KafkaSettings {
  brokers: string[];
  /** Partitions of the topics the service creates: dispatchers of a group beyond this count idle. */
  partitions: number;
  /** Replication factor of the topics the service creates; unset: 3, or fewer on a smaller cluster. */
  replication?: number;
  /** Topics are `<prefix>.<environment>` (KAFKA_TOPIC_PREFIX; default `voucher-events`). */
  topicPrefix?: string;
}

export const DEFAULT_KAFKA_PARTITIONS = 12;

const BROKER = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/**
 * KAFKA_BROKERS: comma-separated `host:port` bootstrap brokers (unset: no Kafka);
 * KAFKA_PARTITIONS (1 to 10000, default 12) and KAFKA_REPLICATION (1 to 32767, default 3 or
 * the cluster's broker count if smaller) for the topics created on start; KAFKA_TOPIC_PREFIX
 * (default `voucher-events`) names them `<prefix>.<environment>`, so deployments can share a cluster.
 */
export const kafkaFrom = (env: NodeJS.ProcessEnv): KafkaSettings | undefined => {
  const bounded = (name: string, max: number): number | undefined => {
    const raw = env[name]?.trim() ?? '';
    if (raw === '') return undefined;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < 1 || value > max)
      throw new Error(`${name} must be an integer from 1 to ${max}, got "${env[name]}"`);
    return value;
  };
  const partitions = bounded('KAFKA_PARTITIONS', 10_000) ?? DEFAULT_KAFKA_PARTITIONS;
  const replication = bounded('KAFKA_REPLICATION', 32_767);
  const raw = env.KAFKA_BROKERS?.trim() ?? '';
  if (raw === '') return undefined;
  const brokers = raw.split(',').map((broker) => broker.trim());
  for (const broker of brokers) {
    const port = BROKER.exec(broker)?.[1];
    if (port === undefined || Number(port) < 1 || Number(port) > 65_535)
      throw new Error(`KAFKA_BROKERS must be comma-separated host:port pairs, got "${env.KAFKA_BROKERS}"`);
  }
  const topicPrefix = env.KAFKA_TOPIC_PREFIX?.trim() ?? '';
  if (topicPrefix !== '' && !/^[A-Za-z0-9._-]{1,100}$/.test(topicPrefix))
    throw new Error(
      `KAFKA_TOPIC_PREFIX must be 1 to 100 letters, digits, '.', '_' or '-', got "${env.KAFKA_TOPIC_PREFIX}"`,
    );
  return {
    brokers,
    partitions,
    ...(replication === undefined ? {} : { replication }),
    ...(topicPrefix === '' ? {} : { topicPrefix }),
  };
};

// ---- MongoDB ---------------------------------------------------------------------------------

/**
 * MONGODB_URL: a `mongodb://` or `mongodb+srv://` connection string of a replica set or mongos
 * (the stores write in transactions); its database name (default `vouchers`) becomes
 * `<name>_sandbox` and `<name>_production`. Unset or empty: undefined. Whether the server can
 * be reached is checked when the stores open.
 */
export const mongodbUrlFrom = (raw: string | undefined): string | undefined => {
  const url = raw?.trim() ?? '';
  if (url === '') return undefined;
  assertMongoUrl(url);
  databaseBaseName(url);
  return url;
};

// ---- EventStoreDB ----------------------------------------------------------------------------

/**
 * EVENTSTORE_URL: an EventStoreDB connection string, `esdb://host[:port][,host2...][?options]` or
 * `esdb+discover://...` (a cluster found through DNS), e.g. `esdb://localhost:2113?tls=false`.
 * Unset or empty: undefined. Whether the server can be reached is checked when the store opens.
 */
export const eventstoreUrlFrom = (raw: string | undefined): string | undefined => {
  const url = raw?.trim() ?? '';
  if (url === '') return undefined;
  const rest = /^esdb(?:\+discover)?:\/\/(.*)$/i.exec(url)?.[1];
  const hosts = rest?.replace(/^[^@/]*@/, '').split(/[/?]/)[0] ?? '';
  if (hosts === '' || /\s/.test(url))
    throw new Error('EVENTSTORE_URL must be an esdb:// or esdb+discover:// connection string with a host');
  return url;
};
