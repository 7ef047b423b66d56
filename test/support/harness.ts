import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { Bus } from '../../src/core/bus.ts';
import {
  openEmbedded,
  type Embedded,
  type EmbeddedOptions,
  type ServerStores,
  type WebhookHooks,
  appRoleOptions,
} from '../../src/composition.ts';
import { AdminAuth } from '../../src/application/adminAuth.ts';
import type { Quotas } from '../../src/application/quotas.ts';
import type { ApplyHooks, ApplyMode } from '../../src/application/context.ts';
import type { WebhookSettings } from '../../src/application/webhooks/settings.ts';
import { createApp } from '../../src/http/createApp.ts';
import type { OpsSettings } from '../../src/http/ops.ts';
import { warmUp, type WarmUpKey } from '../../src/http/warmUp.ts';
import { createHttpServer } from '../../src/http/server.ts';
import type { TrustProxy } from '../../src/http/addresses.ts';
import {
  RATE_LIMIT_GROUPS,
  type RateLimitConfig,
  type RateLimitGroup,
  type RateLimitStoreFactory,
} from '../../src/http/rateLimits.ts';
import { FakeClock } from './fakeClock.ts';
import { expectMatchesOpenApi } from './httpClient.ts';

export const SANDBOX_KEY = 'sk_test_SandboxKeyForTests0000000000001';
export const PRODUCTION_KEY = 'sk_live_ProductionKeyForTests00000000001';

/**
 * Tests make hundreds of requests with one key: by default the limits are lifted out of reach
 * rather than turned off, so the limiter and its headers stay on every path under test.
 */
export const LIFTED_RATE_LIMITS: RateLimitConfig = {
  enabled: true,
  windowMs: 60_000,
  limits: Object.fromEntries(RATE_LIMIT_GROUPS.map((g) => [g, 1_000_000])) as Record<RateLimitGroup, number>,
};

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  key?: string | null;
  headers?: Record<string, string>;
  /** A raw body sent as is (no JSON encoding). */
  raw?: string;
}

/**
 * The whole service on embedded stores in a temp dir, with a fake clock, on 127.0.0.1. Its client
 * (`request`, `get`, `post`, …) checks every 2xx JSON body against the OpenAPI document.
 */
/**
 * Events between voucher snapshots in the HTTP suites: a voucher is folded whole for its first
 * three events and loaded from a snapshot plus keys on demand after, so every suite exercises both.
 */
export const TEST_SNAPSHOT_EVERY = 3;

export class TestService {
  private constructor(
    readonly dataDir: string,
    readonly clock: FakeClock,
    readonly embedded: Embedded,
    private readonly server: Server,
    readonly baseUrl: string,
  ) {}

  static async start(
    options: {
      clock?: FakeClock;
      dataDir?: string;
      rateLimits?: RateLimitConfig;
      rateLimitStores?: RateLimitStoreFactory;
      /** Serves the dashboard at /dashboard with this operator password (else no dashboard). */
      adminPassword?: string;
      /** Where log lines go (default: nowhere). */
      logger?: Logger;
      /** Awaited before each export job starts (holds jobs back). */
      beforeExportJob?: (exportId: string) => Promise<void>;
      /** Where the analytics group runs (PROJECTORS; default: a thread per environment). */
      projectors?: 'thread' | 'inline';
      /** Per-key quotas on quotes and exports (default: the service's defaults). */
      quotas?: Quotas;
      /** express's `trust proxy` (TRUST_PROXY; default off). */
      trustProxy?: TrustProxy;
      /** The root URL of absolute links (PUBLIC_BASE_URL; default: the address the connection reached). */
      publicBaseUrl?: string;
      /** Webhook delivery settings (WEBHOOK_*; default: the service's defaults). */
      webhooks?: WebhookSettings;
      /** Test seams of webhook delivery (DNS answers, jitter, timers); given any, delivery runs inline. */
      webhookHooks?: WebhookHooks;
      /** How apply writes the voucher and order streams (APPLY_MODE; default: atomic). */
      applyMode?: ApplyMode;
      /** Test seams between the appends of a two-append apply. */
      applyHooks?: ApplyHooks;
      /** Where webhook delivery runs (WEBHOOK_DELIVERY; default: a thread per environment, inline with seams). */
      webhookDelivery?: 'thread' | 'inline';
      /** Servers in place of the embedded stores (EVENTSTORE_URL, MONGODB_URL; test/support/serverFakes.ts). */
      servers?: ServerStores;
      /** Webhooks through this bus (inline delivery): the publisher produces, the dispatcher consumes. */
      webhookBus?: Bus;
      /** What this instance runs (ROLE; needs `servers`) and its lease settings. */
      role?: EmbeddedOptions['role'];
      leases?: EmbeddedOptions['leases'];
      /** READ_YOUR_WRITES_MS (default 5 s). */
      readYourWritesMs?: number;
      /**
       * SNAPSHOT_EVERY (default TEST_SNAPSHOT_EVERY: small, so that the HTTP suites decide on
       * vouchers loaded from snapshots as well as on vouchers folded whole).
       */
      snapshotEvery?: number;
      /** `/readyz`'s settings (READY_MAX_PROJECTOR_LAG, …); absent: DEFAULT_OPS_SETTINGS. */
      ops?: OpsSettings;
      /** Warms the request path up with this key before listening, as the service does (warmUp.ts). */
      warmUpKey?: WarmUpKey;
    } = {},
  ): Promise<TestService> {
    const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-test-'));
    const clock = options.clock ?? new FakeClock();
    const logger = options.logger ?? pino({ level: 'silent' });
    const embedded = await openEmbedded({
      dataDir,
      clock,
      logger,
      apiKeys: [SANDBOX_KEY, PRODUCTION_KEY],
      beforeExportJob: options.beforeExportJob,
      projectors: options.projectors,
      quotas: options.quotas,
      webhooks: options.webhooks,
      webhookHooks: options.webhookHooks,
      applyMode: options.applyMode,
      applyHooks: options.applyHooks,
      webhookDelivery: options.webhookDelivery,
      servers: options.servers,
      webhookBus: options.webhookBus,
      role: options.role,
      leases: options.leases,
      readYourWritesMs: options.readYourWritesMs,
      snapshotEvery: options.snapshotEvery ?? TEST_SNAPSHOT_EVERY,
    });
    if (options.applyMode === 'two-append') {
      // As on EventStoreDB 24.10: no atomic append to several streams, so none may be asked for.
      for (const env of Object.values(embedded.environments)) {
        const single = env.events.appendToStreams.bind(env.events);
        env.events.appendToStreams = (appends) =>
          appends.length > 1
            ? Promise.reject(new Error('this store has no atomic multi-stream append'))
            : single(appends);
      }
    }
    const admin = options.adminPassword === undefined ? undefined : await AdminAuth.fromPassword(options.adminPassword);
    const app = createApp({
      environments: embedded.environments,
      keys: embedded.keys,
      logger,
      rateLimits: options.rateLimits ?? LIFTED_RATE_LIMITS,
      rateLimitStores: options.rateLimitStores,
      admin,
      clock,
      trustProxy: options.trustProxy,
      publicBaseUrl: options.publicBaseUrl === undefined ? undefined : () => options.publicBaseUrl!,
      ops: options.ops,
      ...appRoleOptions(options.role ?? 'all'),
      warmUpKey: options.warmUpKey,
    });
    const created = createHttpServer(app);
    if (options.warmUpKey) await warmUp(created, options.warmUpKey, logger);
    const server = await new Promise<Server>((resolve) => {
      const s = created.listen(0, '127.0.0.1', () => resolve(s));
    });
    const { port } = server.address() as AddressInfo;
    return new TestService(dataDir, clock, embedded, server, `http://127.0.0.1:${port}`);
  }

  get sandbox() {
    return this.embedded.environments.sandbox;
  }
  get production() {
    return this.embedded.environments.production;
  }

  async request<T = any>(
    method: string,
    urlPath: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<TestResponse<T>> {
    const key = options.key === undefined ? SANDBOX_KEY : options.key;
    const headers: Record<string, string> = { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...options.headers };
    let payload: string | undefined = options.raw;
    if (payload === undefined && body !== undefined) {
      payload = JSON.stringify(body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${urlPath}`, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    const response = { status: res.status, headers: res.headers, body: parsed as T };
    // every success body is checked against the OpenAPI response schema of its operation
    expectMatchesOpenApi(method, urlPath, response);
    return response;
  }

  post<T = any>(urlPath: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('POST', urlPath, body, options);
  }
  get<T = any>(urlPath: string, options?: RequestOptions) {
    return this.request<T>('GET', urlPath, undefined, options);
  }
  put<T = any>(urlPath: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PUT', urlPath, body, options);
  }
  delete<T = any>(urlPath: string, options?: RequestOptions) {
    return this.request<T>('DELETE', urlPath, undefined, options);
  }
  patch<T = any>(urlPath: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PATCH', urlPath, body, options);
  }

  /** Creates a voucher through the API and returns its body (fails loudly when not 201). */
  async createVoucher(body: Record<string, unknown>, options?: RequestOptions): Promise<any> {
    const res = await this.post('/v1/vouchers', body, options);
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** Stops the server and closes the stores; removes the data dir unless `keepData`. */
  async stop(keepData = false): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.embedded.close();
    if (!keepData) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}
