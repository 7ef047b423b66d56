import http from 'node:http';
import type { Express } from 'express';

/**
 * The HTTP server of an express app, whose requests and responses are created with the app's
 * prototypes (`app.request`, `app.response`) instead of getting them from express afterwards.
 *
 * Why: express's `app.handle` gives every request and response its prototype with
 * `Object.setPrototypeOf`. In V8 (Node 20), an object whose prototype was changed gets a hidden
 * class of its own for every property added afterwards, and express, its router and this
 * service's middleware add a dozen (`next`, `baseUrl`, `params`, `requestId`, `apiKey`, …). So no
 * two requests shared a hidden class: every `req.x` and `res.x` in express, the router, the
 * limiter and the routes missed V8's inline caches and looked the property up the slow way.
 * Profiled with perf on spread apply, those lookups and hidden-class copies took about a quarter
 * of the main thread. Born with the right prototype, express's `setPrototypeOf` (same prototype)
 * changes nothing, and successive requests share a hidden class: measured A/B on spread apply,
 * +25–38% req/s and 22–28% less CPU per request; under perf the slow lookups fell from 24% to 11%.
 *
 * The request and response classes extend Node's, and their prototypes become the app's: each
 * class's prototype is put in front of `app.request` / `app.response` and then is them. (Giving
 * Node's constructors a plain function whose `prototype` is the app's also shares prototypes, but
 * V8 then sizes the objects for that function's empty body: Node's own fields spill out of the
 * object, the router's symbol-keyed store turns it into a dictionary, and dictionary objects share
 * a hidden class only through a small V8 cache, which failed in about one process in 30. As
 * subclasses they keep fast properties and one hidden class; scripts/hiddenClasses.ts shows it.)
 * The app is changed in place: `app.request` and `app.response` are these prototypes afterwards,
 * and whatever the app had put on them before is still inherited.
 */
export const createHttpServer = (app: Express, limits: ServerLimits = DEFAULT_SERVER_LIMITS): http.Server => {
  class AppRequest extends http.IncomingMessage {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  app.request = AppRequest.prototype as Express['request'];
  class AppResponse extends http.ServerResponse {}
  Object.setPrototypeOf(AppResponse.prototype, app.response);
  app.response = AppResponse.prototype as unknown as Express['response'];
  const server = http.createServer(
    {
      IncomingMessage: AppRequest,
      ServerResponse: AppResponse,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits),
    },
    app,
  );
  server.timeout = limits.idleTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  return server;
};

/**
 * How long a connection may take and how many there may be (config.ts reads them from the
 * environment; docs/decisions/017). Node's own defaults leave a connection that sends nothing, a
 * body that trickles in and an answer nobody reads open for minutes or for ever.
 */
export interface ServerLimits {
  /**
   * A request's headers must arrive within this time; a connection that sends nothing at all is
   * answered 408 and closed after it too (Node's headersTimeout).
   */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this time, else 408 and close (requestTimeout). */
  requestTimeoutMs: number;
  /**
   * A socket with no traffic either way for this long is closed (server.timeout): a client that
   * stopped reading its answer, say. Longer than any request takes to answer.
   */
  idleTimeoutMs: number;
  /** How long a kept-alive connection waits for its next request (Node adds one second). */
  keepAliveTimeoutMs: number;
  /** Connections beyond this many are closed as soon as they are accepted. */
  maxConnections: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  // longer than the 60 s idle timeout of common load balancers, so they close first
  keepAliveTimeoutMs: 65_000,
  maxConnections: 1_000,
};

/**
 * How often Node looks for requests past headersTimeout or requestTimeout (its default, 30 s,
 * would let them run that much longer): a quarter of the shorter one, between 10 ms and 1 s.
 */
const checkingInterval = (limits: ServerLimits): number =>
  Math.min(1_000, Math.max(10, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)));

/**
 * Logs connections refused over maxConnections: at most one warning a minute, counting those
 * refused since the last one, so a flood of connections does not flood the log too.
 */
export const warnOnDroppedConnections = (
  server: http.Server,
  warn: (fields: { dropped: number; max_connections: number }, message: string) => void,
  intervalMs = 60_000,
): void => {
  let dropped = 0;
  let warnedAt = -Infinity;
  server.on('drop', () => {
    dropped += 1;
    const now = Date.now();
    if (now - warnedAt < intervalMs) return;
    warn(
      { dropped, max_connections: server.maxConnections },
      'connections refused: the server already holds HTTP_MAX_CONNECTIONS connections',
    );
    dropped = 0;
    warnedAt = now;
  });
};
