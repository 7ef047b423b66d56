import { Router } from 'express';
import type { Guard } from '../../src/http/auth.ts';
import { analyticsRoutes } from '../../src/http/routes/analytics.ts';
import { voucherRoutes } from '../../src/http/routes/vouchers.ts';
import { webhookRoutes } from '../../src/http/routes/webhooks.ts';

/** A router holding every API route (the paths below /v1), each guarded by `guard`: for reading its stack. */
export const apiRoutes = (guard: Guard): Router => {
  const router = Router();
  voucherRoutes(router, guard);
  analyticsRoutes(router, guard);
  webhookRoutes(router, guard);
  return router;
};

type RouteLayer<H> = { route?: { path: string; methods: Record<string, boolean>; stack: Array<{ handle: H }> } };

/**
 * The routes of an express stack (a router's or an app's), one per method: `GET`, its path as
 * registered, and its first handler (a route's guard). Layers that are no route are left out.
 */
export const servedRoutes = <H = unknown>(stack: unknown[]): Array<{ method: string; path: string; first: H }> =>
  (stack as RouteLayer<H>[])
    .filter((layer) => layer.route)
    .flatMap(({ route }) =>
      Object.keys(route!.methods).map((m) => ({
        method: m.toUpperCase(),
        path: route!.path,
        first: route!.stack[0]!.handle,
      })),
    );
