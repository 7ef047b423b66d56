import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

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
      if (!child) {
        child = logger.child({ req_id: this.requestId });
        cache.set(this, child);
      }
      return child;
    },
  });
};

/**
 * Gives each request an id (the caller's X-Request-Id when it is sane, else a new one), echoes it,
 * and logs one line when the response is finished: method, path, status, duration, key id.
 * Headers are never logged, so neither is an API key.
 */
export const requestLog = (logger: Logger): RequestHandler => {
  // One listener function for every response (no closure per request); the request carries its start.
  function logFinished(this: Response): void {
    const { req } = this;
    if (this.statusCode < 500 && !logger.isLevelEnabled('info')) return;
    const line = {
      req_id: req.requestId,
      method: req.method,
      path: req.originalUrl.split('?')[0],
      status: this.statusCode,
      duration_ms: Math.round((performance.now() - req.startedAt) * 1000) / 1000,
      key_id: req.apiKey?.id,
      environment: req.ctx?.environment,
      error_code: this.locals.errorCode as string | undefined,
    };
    if (this.statusCode >= 500) logger.error(line, 'request failed');
    else logger.info(line, 'request');
  }
  return (req, res, next) => {
    req.startedAt = performance.now();
    const offered = req.headers['x-request-id'];
    req.requestId =
      typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : `req_${randomUUID().replaceAll('-', '')}`;
    res.setHeader('X-Request-Id', req.requestId);
    res.on('finish', logFinished);
    next();
  };
};
