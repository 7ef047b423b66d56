import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Gives each request an id (the caller's X-Request-Id when it is sane, else a new one), echoes it,
 * and logs one line when the response is finished: method, path, status, duration, key id.
 * Headers are never logged, so neither is an API key.
 */
export const requestLog = (logger: Logger): RequestHandler => (req, res, next) => {
  const started = process.hrtime.bigint();
  const offered = req.get('X-Request-Id');
  req.requestId = offered && REQUEST_ID.test(offered) ? offered : `req_${randomUUID().replaceAll('-', '')}`;
  res.locals.requestId = req.requestId;
  res.setHeader('X-Request-Id', req.requestId);
  req.log = logger.child({ req_id: req.requestId });
  res.on('finish', () => {
    const line = {
      method: req.method,
      path: req.originalUrl.split('?')[0],
      status: res.statusCode,
      duration_ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
      key_id: req.apiKey?.id,
      environment: req.ctx?.environment,
      error_code: res.locals.errorCode as string | undefined,
    };
    if (res.statusCode >= 500) req.log.error(line, 'request failed');
    else req.log.info(line, 'request');
  });
  next();
};
