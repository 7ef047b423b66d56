import type { RequestHandler, Response } from 'express';
import { fingerprint } from '../application/views.ts';
import { HttpError } from './errors.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

interface StoredResponse {
  bodyHash: string;
  status: number;
  body: unknown;
  location?: string;
}

const inFlight = new WeakMap<object, Map<string, Promise<void>>>();

/**
 * Stripe-style `Idempotency-Key`: the same key with the same body within 24 hours gets the first
 * response again (with `Idempotent-Replayed: true`); the same key with another body gets 409
 * IDEMPOTENCY_KEY_REUSED. Keys are scoped to the API key and the endpoint. As at Stripe, a
 * result is kept only when the endpoint really ran: 5xx, request validation failures
 * (INVALID_REQUEST) and concurrency conflicts are not kept, so a retry runs again. Concurrent
 * requests with one key wait for the first to finish.
 *
 * `replayAs200`: a kept 201 is replayed as 200 (apply: "201 on first application, 200 on an
 * idempotent repeat", whichever way the repeat is recognised).
 */
const NOT_KEPT = new Set(['INVALID_REQUEST', 'CONCURRENT_MODIFICATION', 'RATE_LIMIT_EXCEEDED']);

export const idempotency =
  (options: { replayAs200?: boolean } = {}): RequestHandler =>
  async (req, res, next) => {
    const key = req.get('Idempotency-Key');
    if (key === undefined) return next();
    if (key.length < 1 || key.length > 255) {
      throw new HttpError('INVALID_REQUEST', 'Idempotency-Key must be 1 to 255 characters', [
        { field: 'Idempotency-Key', message: 'must be 1 to 255 characters' },
      ]);
    }
    const { kv, clock } = req.ctx;
    const scope = `${req.apiKey.id}:${req.method}:${req.baseUrl}${req.path}:${key}`;
    const bodyHash = fingerprint(req.body ?? null);
    let running = inFlight.get(kv);
    if (!running) {
      running = new Map();
      inFlight.set(kv, running);
    }
    // Look again after every wait: another request with this key may start while kv.get runs.
    for (;;) {
      while (running.has(scope)) await running.get(scope);
      const stored = await kv.get<StoredResponse>('idempotency', scope);
      if (stored) return replay(res, stored, bodyHash, key, options.replayAs200 === true);
      if (!running.has(scope)) break;
    }
    // Waiters are released once the response is stored (not merely sent), else when it closes.
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = () => {
        if (running!.get(scope) === mine) running!.delete(scope);
        resolve();
      };
    });
    running.set(scope, mine);
    let storing = false;
    res.on('close', () => {
      if (!storing) release();
    });
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const keep = res.statusCode < 500 && !NOT_KEPT.has(String(res.locals.errorCode));
      if (keep && !storing) {
        storing = true;
        const record: StoredResponse = {
          bodyHash,
          status: res.statusCode,
          body,
          location: res.getHeader('Location') as string | undefined,
        };
        kv.put('idempotency', scope, record, clock.now().getTime() + IDEMPOTENCY_TTL_MS)
          .catch((error: unknown) => req.log?.error({ err: error }, 'idempotency record not stored'))
          .finally(release);
      }
      return json(body);
    };
    next();
  };

const replay = (res: Response, stored: StoredResponse, bodyHash: string, key: string, replayAs200: boolean): void => {
  if (stored.bodyHash !== bodyHash) {
    throw new HttpError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body', {
      idempotency_key: key,
    });
  }
  if (stored.location) res.setHeader('Location', stored.location);
  res.setHeader('Idempotent-Replayed', 'true');
  res.status(replayAs200 && stored.status === 201 ? 200 : stored.status).json(stored.body);
};
