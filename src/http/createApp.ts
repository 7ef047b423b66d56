import express, { type Express, type Request, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { AdminAuth } from '../application/adminAuth.ts';
import type { ApiKeyRegistry } from '../application/apiKeys.ts';
import type { EnvContext, Environment } from '../application/context.ts';
import { systemClock, type Clock } from '../domain/clock.ts';
import { connectionBaseUrl, type TrustProxy } from './addresses.ts';
import { authenticate, guardWith } from './auth.ts';
import { dashboardRouter } from './dashboard/router.ts';
import { errorHandler, HttpError } from './errors.ts';
import { buildOpenApi } from './openapi.ts';
import {
  createRateLimiter,
  defaultRateLimitConfig,
  type RateLimitConfig,
  type RateLimitStoreFactory,
} from './rateLimits.ts';
import type { ServiceMetrics } from './metrics.ts';
import { opsRoutes, type OpsSettings, type RoleReadiness } from './ops.ts';
import { installRequestLogger, requestLog } from './requestLog.ts';
import { analyticsRoutes } from './routes/analytics.ts';
import { voucherRoutes } from './routes/vouchers.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { under } from './routes/mount.ts';
import { admittingWarmUp, type WarmUpKey } from './warmUp.ts';

export interface AppDeps {
  environments: Record<Environment, EnvContext>;
  keys: ApiKeyRegistry;
  logger: Logger;
  /** Per-key, per-group limits (config.ts); absent: the spec's defaults. */
  rateLimits?: RateLimitConfig;
  /** Where the limit counters live; absent: in this process (see rateLimits.ts). */
  rateLimitStores?: RateLimitStoreFactory;
  /** The operator's password: with it the dashboard is served at /dashboard; without it, not at all. */
  admin?: AdminAuth;
  /** The dashboard's clock (session expiry); absent: the system clock. */
  clock?: Clock;
  /**
   * express's `trust proxy` (TRUST_PROXY, config.ts): which X-Forwarded-* hops to believe for the
   * client's address (the dashboard's sign-in throttle) and scheme (Secure cookies). Absent: none.
   */
  trustProxy?: TrustProxy;
  /**
   * The root URL absolute links start with (`download_url`), without `/v1`; read per request,
   * since the listen address is known only once the server listens. Absent: the address and port
   * the request's connection reached (never a request header).
   */
  publicBaseUrl?: () => string;
  /** Request metrics and `GET /metrics`; absent (METRICS=off): neither. */
  metrics?: ServiceMetrics;
  /** `/readyz`'s bound on the core projector's lag, and METRICS_TOKEN; absent: DEFAULT_OPS_SETTINGS, no token. */
  ops?: OpsSettings;
  /** True once the service is shutting down (`/readyz` answers 503). */
  stopping?: () => boolean;
  /** `/readyz`'s checks of the process role (see RoleReadiness); absent: ROLE=all's. */
  readiness?: RoleReadiness;
  /**
   * Serve only the operator's endpoints (`/healthz`, `/readyz`, `/metrics`), every other path
   * 404 (the `projector`, `publisher` and `dispatcher` roles); absent or false: the whole API.
   */
  opsOnly?: boolean;
  /** A key admitted, beside `keys`, until it is closed: the warm-up's before the service listens (warmUp.ts). */
  warmUpKey?: WarmUpKey;
}

type BaseUrl = (req: Request) => string;

const notFound: RequestHandler = (req) => {
  throw new HttpError('NOT_FOUND', `No endpoint ${req.method} ${req.originalUrl.split('?')[0]}`, {
    path: req.originalUrl.split('?')[0],
  });
};

/** The HTTP API under /v1 (or only the operator's endpoints: `opsOnly`). Builds nothing itself: every adapter arrives in `deps`. */
export const createApp = (deps: AppDeps): Express => {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.trustProxy ?? false);
  installRequestLogger(app.request, deps.logger);
  app.use(requestLog(deps.logger));
  if (deps.metrics) {
    deps.metrics.installRouteCapture(app.request);
    app.use(deps.metrics.middleware());
  }
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  opsRoutes(app, {
    environments: deps.environments,
    logger: deps.logger,
    settings: deps.ops,
    metrics: deps.metrics,
    stopping: deps.stopping,
    readiness: deps.readiness,
  });
  if (deps.opsOnly) {
    app.use(notFound);
    app.use(errorHandler);
    return app;
  }
  // Serialized once (about 290 kB): each request sends the same bytes instead of stringifying again.
  const openapi = JSON.stringify(buildOpenApi());
  app.get('/v1/openapi.json', (_req, res) => {
    res.type('application/json').send(openapi);
  });

  const limit = createRateLimiter(deps.rateLimits ?? defaultRateLimitConfig(), deps.rateLimitStores, deps.logger);
  const keys = deps.warmUpKey ? admittingWarmUp(deps.keys, deps.warmUpKey) : deps.keys;
  const guard = guardWith(authenticate(keys, deps.environments), limit);
  const { publicBaseUrl } = deps;
  const baseUrl: BaseUrl = publicBaseUrl ? () => publicBaseUrl() : connectionBaseUrl;
  // On the app itself, under /v1, not on routers mounted there: no router hop per request (routes/mount.ts).
  const v1 = under(app, '/v1');
  voucherRoutes(v1, guard);
  analyticsRoutes(v1, guard, baseUrl);
  webhookRoutes(v1, guard);
  if (deps.admin)
    app.use(
      '/dashboard',
      dashboardRouter({
        keys: deps.keys,
        environments: deps.environments,
        admin: deps.admin,
        clock: deps.clock ?? systemClock,
        logger: deps.logger,
      }),
    );
  app.use(notFound);
  app.use(errorHandler);
  return app;
};
