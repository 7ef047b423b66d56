import type { Request, RequestHandler } from 'express';
import type { Scope } from '../application/apiKeys.ts';
import type { EnvContext, Environment } from '../application/context.ts';
import { HttpError } from './errors.ts';
import type { RateLimitGroup, RateLimiter } from './rateLimits.ts';
import { hasBody, parseJsonBody } from './body.ts';
import type { KeyLookup } from './warmUp.ts';

/** Who is calling: sets `req.apiKey` and `req.ctx`, or throws 401. */
export type Authenticator = (req: Request) => void;

/**
 * `Authorization: Bearer sk_test_…` selects the sandbox, `sk_live_…` production. Missing or
 * malformed: 401 MISSING_API_KEY; unknown or revoked: 401 INVALID_API_KEY.
 */
export const authenticate =
  (keys: KeyLookup, environments: Record<Environment, EnvContext>): Authenticator =>
  (req) => {
    const header = req.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    if (!match) {
      throw new HttpError('MISSING_API_KEY', 'Send your API key as "Authorization: Bearer <key>"', {});
    }
    const record = keys.authenticate(match[1]!);
    if (!record) throw new HttpError('INVALID_API_KEY', 'The API key is not valid', {});
    req.apiKey = record;
    req.ctx = environments[record.environment];
  };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

const requireScope = (req: Request, scope: Scope): void => {
  if (!req.apiKey.scopes.includes(scope)) {
    throw new HttpError('INSUFFICIENT_PERMISSIONS', `This API key lacks the ${scope} scope`, { required_scope: scope });
  }
};

/**
 * A body must be JSON: anything else is 415 before it is read.
 */
const requireJson = (req: Request): void => {
  if (hasBody(req) && !req.is('application/json')) {
    throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json', {});
  }
};

/** The middleware of a protected route: `guard('vouchers:read', 'read')`, before its handler. */
export type Guard = (scope: Scope, group: RateLimitGroup) => RequestHandler;

/**
 * Authenticate, then count the request against the key's rate limit for the route's group (the
 * limiter needs the key), then check the scope, then read the JSON body. The limit runs before the
 * scope check on purpose: a key hammering an endpoint it may not use is limited too, and its 403s
 * carry the headers. Bodies are read only after the key, the limit and the scope are checked, so
 * an anonymous caller cannot make the service parse a megabyte, and every answer of a limited
 * endpoint (413, 415 included) carries the limit headers.
 *
 * One middleware rather than five: each router hop costs a few microseconds, and on the
 * redemption endpoints these steps ran on every request.
 */
export const guardWith =
  (authenticate: Authenticator, limit: RateLimiter): Guard =>
  (scope, group) => {
    const limiter = limit(group);
    return (req, res, next) => {
      authenticate(req);
      limiter(req, res, (error?: unknown) => {
        if (error) {
          next(error);
          return;
        }
        try {
          requireScope(req, scope);
          requireJson(req);
        } catch (failure) {
          next(failure);
          return;
        }
        parseJsonBody(req, res, next);
      });
    };
  };
