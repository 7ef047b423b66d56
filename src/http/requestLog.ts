import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Gives each request an id (the caller's X-Request-Id when it is sane, else a new one), echoes it,
 * and logs one line when the response is finished: method, path, status, duration, key id.
 * Headers are never logged, so neither is an API key.
 */
/**
 * `req.log`: a child logger carrying the request id, made on first use (most requests log only
 * their one line), defined once on the app's request prototype.
 */
export const installRequestLogger = (request: object, logger: Logger): void => {
  const cache = new WeakMap<object, Logger>();
  Object.defineProperty(request, 'log', {
    configurable: true,
    get(this: { requestId: string }) {
      let child = cache.get(this);
      if (!child) { child = logger.child({ req_id: this.requestId }); cache.set(this, child); }
      return child;
    },
  });
};

export const requestLog = (logger: Logger): RequestHandler => (req, res, next) => {
  const started = process.hrtime.bigint();
  const offered = req.get('X-Request-Id');
  req.requestId = offered && REQUEST_ID.test(offered) ? offered : `req_${randomUUID().replaceAll('-', '')}`;
  res.locals.requestId = req.requestId;
  res.setHeader('X-Request-Id', req.requestId);
  res.on('finish', () => {
    if (res.statusCode < 500 && !logger.isLevelEnabled('info')) return;
    const line = {
      method: req.method,
      path: req.originalUrl.split('?')[0],
      status: res.statusCode,
      duration_ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
      key_id: req.apiKey?.id,
      environment: req.ctx?.environment,
      error_code: res.locals.errorCode as string | undefined,
    };
    if (res.statusCode >= 500) logger.error({ req_id: req.requestId, ...line }, 'request failed');
    else logger.info({ req_id: req.requestId, ...line }, 'request');
  });
  next();
};
