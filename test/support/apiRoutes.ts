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
