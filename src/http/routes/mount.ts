import type { IRouter, RequestHandler } from 'express';

type Register = (path: string, ...handlers: RequestHandler[]) => void;

/** What a route module registers its routes with: an express app, a router, or one under a prefix. */
export interface Routes {
  get: Register;
  post: Register;
  put: Register;
  patch: Register;
  delete: Register;
}

/**
 * `target`'s routes under `prefix`: `under(app, '/v1').get('/vouchers', …)` is
 * `app.get('/v1/vouchers', …)`.
 *
 * The API's routes are registered on the app itself rather than on routers mounted at `/v1`: each
 * mounted router is a hop every request passes through (express's router dispatching into a
 * router of its own, and back out when no route there matches; docs/decisions/110).
 * A route behaves the same either way: express matches the whole path without case or a trailing
 * slash mattering, `req.params` has the same names, and `req.baseUrl + req.path` (the idempotency
 * scope) and `req.baseUrl + route.path` (the metrics' route label) are the same strings.
 */
export const under = (target: IRouter, prefix: string): Routes => ({
  get: (path, ...handlers) => void target.get(prefix + path, ...handlers),
  post: (path, ...handlers) => void target.post(prefix + path, ...handlers),
  put: (path, ...handlers) => void target.put(prefix + path, ...handlers),
  patch: (path, ...handlers) => void target.patch(prefix + path, ...handlers),
  delete: (path, ...handlers) => void target.delete(prefix + path, ...handlers),
});
