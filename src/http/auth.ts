import express, { type RequestHandler } from 'express';
import type { ApiKeyRegistry, Scope } from '../application/apiKeys.ts';
import type { EnvContext, Environment } from '../application/context.ts';
import { HttpError } from './errors.ts';
import type { RateLimitGroup, RateLimiter } from './rateLimits.ts';

/**
 * `Authorization: Bearer sk_test_…` selects the sandbox, `sk_live_…` production. Missing or
 * malformed: 401 MISSING_API_KEY; unknown or revoked: 401 INVALID_API_KEY.
 */
export const authenticate = (keys: ApiKeyRegistry, environments: Record<Environment, EnvContext>): RequestHandler => (req, _res, next) => {
  const header = req.get('Authorization');
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) {
    throw new HttpError('MISSING_API_KEY', 'Send your API key as "Authorization: Bearer <key>"', {});
  }
  const record = keys.authenticate(match[1]!);
  if (!record) throw new HttpError('INVALID_API_KEY', 'The API key is not valid', {});
  req.apiKey = record;
  req.ctx = environments[record.environment];
  next();
};

export const requireScope = (scope: Scope): RequestHandler => (req, _res, next) => {
  if (!req.apiKey.scopes.includes(scope)) {
    throw new HttpError('INSUFFICIENT_PERMISSIONS', `This API key lacks the ${scope} scope`, { required_scope: scope });
  }
  next();
};

/** The middleware of a protected route: `...guard('vouchers:read', 'read')`. */
export type Guard = (scope: Scope, group: RateLimitGroup) => RequestHandler[];

/**
 * Authenticate, then count the request against the key's rate limit for the route's group (the
 * limiter needs the key), then check the scope. The limit runs before the scope check on purpose:
 * a key hammering an endpoint it may not use is limited too, and its 403s carry the headers.
 */
export const guardWith = (authenticate: RequestHandler, limit: RateLimiter): Guard =>
  (scope, group) => [authenticate, limit(group), requireScope(scope), requireJson, parseJson];

export const MAX_BODY_BYTES = 1_048_576;

/**
 * A body must be JSON: anything else is 415 before it is read. Bodies are read only after the
 * key, the limit and the scope are checked, so an anonymous caller cannot make the service parse
 * a megabyte, and every answer of a limited endpoint (413, 415 included) carries the limit headers.
 */
const requireJson: RequestHandler = (req, _res, next) => {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (hasBody && !req.is('application/json')) {
    throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json', {});
  }
  next();
};

const parseJson = express.json({ limit: MAX_BODY_BYTES, strict: true, type: 'application/json' });
