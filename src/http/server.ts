import http from 'node:http';
import type { Socket } from 'node:net';
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
 * The objects still end up with dictionary (hash table) properties: the router's symbol-keyed
 * store on `req` and Node's own on `res` put them there. Dictionary-mode objects share a hidden
 * class through a small V8 cache; in about one process in 30 they did not (scripts/hiddenClasses.ts
 * shows it), and that process serves as plain express would.
 *
 * Node calls `new AppRequest(socket)` and `new AppResponse(req, options)`; each runs Node's own
 * constructor on the new object, as a subclass would. (`Reflect.construct` with the app's
 * prototype as `newTarget` builds the same objects but, measured, without shared hidden classes.)
 */
export const createHttpServer = (app: Express): http.Server => {
  // Node 20 to 24 define both as plain functions. Should a later Node make them classes (which
  // cannot be called on an existing object), serve as express does rather than fail every request.
  if ([http.IncomingMessage, http.ServerResponse].some((ctor) => Function.prototype.toString.call(ctor).startsWith('class'))) {
    return http.createServer(app);
  }
  function AppRequest(this: http.IncomingMessage, socket: Socket): void {
    Reflect.apply(http.IncomingMessage, this, [socket]);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: http.ServerResponse, req: http.IncomingMessage, options?: object): void {
    Reflect.apply(http.ServerResponse, this, [req, options]); // Node passes options the typings omit
  }
  AppResponse.prototype = app.response;
  return http.createServer({
    IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
  }, app);
};
