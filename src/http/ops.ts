import { timingSafeEqual, createHash } from 'node:crypto';
import type { Routes } from './routes/mount.ts';
import type { Logger } from 'pino';
import type { EnvContext, Environment } from '../application/context.ts';
import { sendError } from './errors.ts';
import type { ServiceMetrics } from './metrics.ts';

/** How `GET /readyz` decides, and who may read `GET /metrics` (config.ts reads them from the environment). */
export interface OpsSettings {
  /** Not ready while the core projection group is more than this many positions behind the head (READY_MAX_PROJECTOR_LAG). */
  readyMaxProjectorLag: number;
  /** A store check that takes longer than this counts as unreachable. */
  readyCheckTimeoutMs: number;
  /** METRICS_TOKEN: when set, `GET /metrics` needs `Authorization: Bearer <token>`. */
  metricsToken?: string;
}

export const DEFAULT_OPS_SETTINGS: OpsSettings = { readyMaxProjectorLag: 1_000, readyCheckTimeoutMs: 2_000 };

/** A store `/readyz` reads (per environment): event store head, read stores, key-value store, deliveries. */
export type ReadinessStore = 'events' | 'reads' | 'analytics_reads' | 'kv' | 'webhooks';

/** One more readiness check of an environment: resolves with why it is not ready, or undefined. */
export interface ReadinessProbe {
  check: string;
  probe(): Promise<string | undefined>;
}

/**
 * What `/readyz` checks in a process role other than `all` (the composition root says, per role):
 * which stores must answer, where the core group's checkpoint is read (the read store's stored
 * checkpoint, the one every process shares), and the role's own checks (leases, the bus).
 * Absent: every store, and the core group's checkpoint in this process.
 */
export interface RoleReadiness {
  stores: readonly ReadinessStore[];
  /** The core group's stored checkpoint; absent: no lag check. */
  coreCheckpoint?: (ctx: EnvContext) => Promise<number>;
  probes?: (ctx: EnvContext) => ReadinessProbe[];
}

const ALL_STORES: readonly ReadinessStore[] = ['events', 'reads', 'analytics_reads', 'kv', 'webhooks'];

export interface OpsDeps {
  environments: Record<Environment, EnvContext>;
  logger: Logger;
  settings?: OpsSettings;
  /** Absent (METRICS=off): no `/metrics`. */
  metrics?: ServiceMetrics;
  /** True once the service is shutting down: `/readyz` answers 503 so that traffic goes elsewhere. */
  stopping?: () => boolean;
  /** The role's checks; absent: every store and this process's core checkpoint (ROLE=all). */
  readiness?: RoleReadiness;
}

/** One failed readiness check: its name (`sandbox.events`) and why, in a few words. */
export interface NotReady {
  check: string;
  reason: string;
}

const withTimeout = <T>(promise: Promise<T>, ms: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });

/**
 * Runs every readiness check of every environment at once: each store of the role (`readiness`;
 * ROLE=all: event store head, core and analytics read stores, key-value store, webhook deliveries
 * store) answers a cheap read within the timeout, the core projection group (what reads and
 * read-your-writes wait for) is at most `readyMaxProjectorLag` positions behind the head, and the
 * role's own probes pass. Resolves with the failures ([] when ready); the errors themselves go to
 * the log, not to the answer.
 */
export const readinessFailures = async (deps: OpsDeps): Promise<NotReady[]> => {
  const settings = deps.settings ?? DEFAULT_OPS_SETTINGS;
  const failures: NotReady[] = [];
  const check = async (name: string, probe: () => Promise<unknown>): Promise<unknown> => {
    try {
      return await withTimeout(probe(), settings.readyCheckTimeoutMs);
    } catch (error) {
      deps.logger.warn({ err: error, check: name }, 'readiness check failed');
      failures.push({
        check: name,
        reason: /no answer within/.test((error as Error).message) ? 'timed out' : 'unreachable',
      });
      return undefined;
    }
  };
  const role = deps.readiness;
  const stores = role?.stores ?? ALL_STORES;
  const probes: Record<ReadinessStore, (ctx: EnvContext) => (() => Promise<unknown>) | undefined> = {
    events: (ctx) => () => ctx.events.headPosition(),
    reads: (ctx) => () => ctx.reads.getCheckpoint('readiness'),
    analytics_reads: (ctx) => () => ctx.analyticsReads.getCheckpoint('readiness'),
    kv: (ctx) => () => ctx.kv.get('readiness', 'readiness'),
    webhooks: (ctx) => {
      const deliveries = ctx.webhooks.deliveries;
      return deliveries ? () => deliveries.store.getCheckpoint('readiness') : undefined;
    },
  };
  await Promise.all(
    Object.values(deps.environments).map(async (ctx) => {
      const env = ctx.environment;
      const coreCheckpoint = role ? role.coreCheckpoint : async () => ctx.projector.checkpoint;
      const lagged = stores.includes('events') && coreCheckpoint !== undefined;
      const [head, checkpoint] = await Promise.all([
        lagged ? check(`${env}.events`, () => ctx.events.headPosition()) : undefined,
        lagged ? check(`${env}.projector.core`, () => coreCheckpoint(ctx)) : undefined,
        ...stores
          .filter((store) => !(lagged && store === 'events'))
          .map((store) => {
            const probe = probes[store](ctx);
            return probe ? check(`${env}.${store}`, probe) : undefined;
          }),
        ...(role?.probes?.(ctx) ?? []).map(async ({ check: name, probe }) => {
          const reason = await check(name, probe);
          if (typeof reason === 'string') failures.push({ check: name, reason });
        }),
      ]);
      if (typeof head === 'number' && typeof checkpoint === 'number') {
        const lag = head - checkpoint;
        if (lag > settings.readyMaxProjectorLag)
          failures.push({
            check: `${env}.projector.core`,
            reason: `lag ${lag} > ${settings.readyMaxProjectorLag} positions`,
          });
      }
    }),
  );
  return failures.sort((a, b) => a.check.localeCompare(b.check));
};

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * The operator's endpoints, at the root and without an API key: `GET /healthz` (the process
 * serves), `GET /readyz` (stores reachable, core projector caught up) and `GET /metrics`
 * (Prometheus text; behind METRICS_TOKEN when it is set).
 */
export const opsRoutes = (routes: Routes, deps: OpsDeps): void => {
  routes.get('/healthz', (_req, res) => {
    res.set('Cache-Control', 'no-store').json({ status: 'ok' });
  });
  routes.get('/readyz', async (_req, res) => {
    const failures: NotReady[] = deps.stopping?.()
      ? [{ check: 'service', reason: 'shutting down' }]
      : await readinessFailures(deps);
    res.set('Cache-Control', 'no-store');
    if (failures.length === 0) res.json({ status: 'ready' });
    else res.status(503).json({ status: 'not_ready', failures });
  });
  const { metrics } = deps;
  if (metrics) {
    const token = deps.settings?.metricsToken;
    const expected = token ? digest(`Bearer ${token}`) : undefined;
    routes.get('/metrics', async (req, res) => {
      // compared as digests, in constant time: the token's length does not show either
      if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
        res.set('WWW-Authenticate', 'Bearer realm="metrics"');
        if (req.headers.authorization === undefined)
          sendError(res, 'MISSING_API_KEY', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
        else sendError(res, 'INVALID_API_KEY', 'The bearer token is not the METRICS_TOKEN');
        return;
      }
      const text = await metrics.scrape();
      res.set('Content-Type', metrics.contentType).set('Cache-Control', 'no-store').send(text);
    });
  }
};
