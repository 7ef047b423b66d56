import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EnvContext, Environment } from '../application/context.ts';
import type { EndpointQueueStats } from '../application/webhooks/queueStats.ts';

/** What `GET /metrics` reads at each scrape, besides what requests and appends record as they happen. */
export interface MetricsSources {
  environments: Record<Environment, EnvContext>;
  /**
   * Pending and failed webhook deliveries per endpoint of an environment (the composition root
   * says where they are counted); absent: no webhook metrics.
   */
  webhookQueues?: (environment: Environment) => Promise<EndpointQueueStats[]>;
  /**
   * The projection groups' checkpoints as stored (`core`, `analytics`, `webhooks`), for
   * `projector_lag` in a process role other than `all`, where the groups run in another process;
   * absent: the checkpoints of the groups this process runs.
   */
  storedCheckpoints?: (ctx: EnvContext) => Promise<Array<[string, number]>>;
  /** Where a source that could not be read is reported (its samples are left out of that scrape). */
  logger?: Pick<Logger, 'warn'>;
}

/** Label of a request no route answered (404s, static assets): one value for every unknown path. */
export const UNMATCHED_ROUTE = 'unmatched';

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const APPEND_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** The request's express route pattern, full from the root (`/v1/vouchers/:voucherId`), recorded when the router matches it. */
const ROUTE_PATTERN = Symbol('routePattern');
const ROUTE = Symbol('route');
type Routed = { baseUrl: string; [ROUTE]?: unknown; [ROUTE_PATTERN]?: string };

/**
 * The service's Prometheus metrics, in a registry of their own (prom-client):
 *
 * - `http_request_duration_seconds{method,route,status}`: each request's time from its arrival to
 *   its answer's last byte. `route` is the express route pattern (`/v1/vouchers/:voucherId`),
 *   `unmatched` for a request no route answered (unknown paths, static assets), so the label's values are bounded by the routes.
 * - `event_store_append_duration_seconds{environment}`: each append to an environment's event
 *   store, from the call to its durable commit (group commit included).
 * - `projector_lag{environment,group}`: head position − the group's checkpoint (`core`,
 *   `analytics`, and `webhooks`, the webhook publisher), read at each scrape (in a process role
 *   other than `all`: the checkpoints stored in the read stores).
 * - `webhook_deliveries_pending{environment,endpoint}` and
 *   `webhook_deliveries_failed{environment,endpoint}`: read at each scrape.
 * - with `defaultMetrics`, prom-client's process and Node.js metrics (CPU, memory, event loop lag,
 *   garbage collection).
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly http: Histogram<'method' | 'route' | 'status'>;
  private readonly append: Histogram<'environment'>;
  private sources?: MetricsSources;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    this.http = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from a request’s arrival to the last byte of its answer, by express route pattern, method and status',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers: [this.registry],
    });
    this.append = new Histogram({
      name: 'event_store_append_duration_seconds',
      help: 'Time from an append to the event store to its durable commit',
      labelNames: ['environment'],
      buckets: APPEND_BUCKETS,
      registers: [this.registry],
    });
    const sources = () => this.sources;
    /** A source that failed leaves its environment's samples out of this scrape; the rest is served. */
    const failed = (error: unknown, what: string, environment: string) =>
      this.sources?.logger?.warn({ err: error, environment }, `metrics: ${what} could not be read`);
    new Gauge({
      name: 'projector_lag',
      help: 'Event store head position minus the projection group’s checkpoint (global positions: about the events not yet projected)',
      labelNames: ['environment', 'group'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [environment, ctx] of Object.entries(sources()?.environments ?? {})) {
          let head: number;
          try {
            head = await ctx.events.headPosition();
          } catch (error) {
            failed(error, 'the event store head', environment);
            continue;
          }
          const stored = sources()?.storedCheckpoints;
          let groups: Array<[string, number]>;
          try {
            groups = stored
              ? await stored(ctx)
              : (
                  [
                    ['core', ctx.projector],
                    ['analytics', ctx.analytics],
                    ['webhooks', ctx.webhooks.publisher],
                  ] as Array<[string, { checkpoint: number } | undefined]>
                ).flatMap(([group, handle]) => (handle ? [[group, handle.checkpoint] as [string, number]] : []));
          } catch (error) {
            failed(error, 'the stored checkpoints', environment);
            continue;
          }
          for (const [group, checkpoint] of groups) this.set({ environment, group }, Math.max(0, head - checkpoint));
        }
      },
    });
    // both webhook gauges are collected at once in a scrape: the stores are counted once for them
    let counting: Promise<Array<[Environment, EndpointQueueStats[]]>> | undefined;
    const queueStats = () =>
      (counting ??= (async () => {
        const { webhookQueues, environments } = sources() ?? {};
        if (!webhookQueues || !environments) return [];
        const out: Array<[Environment, EndpointQueueStats[]]> = [];
        for (const environment of Object.keys(environments) as Environment[]) {
          try {
            out.push([environment, await webhookQueues(environment)]);
          } catch (error) {
            failed(error, 'the webhook deliveries', environment);
          }
        }
        return out;
      })().finally(() => {
        counting = undefined;
      }));
    const queues = (name: string, help: string, pick: (s: EndpointQueueStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['environment', 'endpoint'],
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const [environment, list] of await queueStats())
            for (const stats of list) this.set({ environment, endpoint: stats.endpointId }, pick(stats));
        },
      });
    queues(
      'webhook_deliveries_pending',
      'Webhook deliveries not final yet (due, waiting for a retry, or behind an earlier one of their voucher), per endpoint',
      (s) => s.pending,
    );
    queues(
      'webhook_deliveries_failed',
      'Webhook deliveries that failed for good, among those kept (30 days), per endpoint',
      (s) => s.failed,
    );
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Where the scrape-time metrics are read (set once the environments are open). */
  observe(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** Records one append's duration (seconds) in an environment. */
  appended(environment: Environment, seconds: number): void {
    this.append.observe({ environment }, seconds);
  }

  /** The Prometheus text exposition of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * Makes `req.route`, on the app's request prototype, remember the full pattern of the route the
   * router matched (its base URL at that moment plus the route's path): by the time the answer is
   * finished, an error may have left the router and restored `req.baseUrl`.
   */
  installRouteCapture(request: object): void {
    Object.defineProperty(request, 'route', {
      configurable: true,
      get(this: Routed) {
        return this[ROUTE];
      },
      set(this: Routed, route: { path?: unknown } | undefined) {
        this[ROUTE] = route;
        if (route) this[ROUTE_PATTERN] = `${this.baseUrl}${String(route.path)}`;
      },
    });
  }

  /** Times each request into `http_request_duration_seconds` (needs `req.startedAt`: after requestLog). */
  middleware(): RequestHandler {
    const http = this.http;
    function finished(this: Response): void {
      const req = this.req as unknown as Routed & { method: string; startedAt: number };
      http.observe(
        { method: req.method, route: req[ROUTE_PATTERN] ?? UNMATCHED_ROUTE, status: this.statusCode },
        (performance.now() - req.startedAt) / 1000,
      );
    }
    return (_req, res, next) => {
      res.on('finish', finished);
      next();
    };
  }
}
