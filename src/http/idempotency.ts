import type { RequestHandler, Response } from 'express';
import { fingerprint } from '../application/views.ts';
import { HttpError } from './errors.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

interface StoredResponse { bodyHash: string; status: number; body: unknown; location?: string }

const inFlight = new WeakMap<object, Map<string, Promise<void>>>();

/**
 * Stripe-style `Idempotency-Key`: the same key with the same body within 24 hours gets the first
 * response again (with `Idempotent-Replayed: true`); the same key with another body gets 409
 * IDEMPOTENCY_KEY_REUSED. Keys are scoped to the API key and the endpoint. Responses of 5xx are
 * not kept, so a retry after a server failure runs again. Concurrent requests with one key wait
 * for the first to finish.
 */
export const idempotency: RequestHandler = async (req, res, next) => {
  const key = req.get('Idempotency-Key');
  if (key === undefined) return next();
  if (key.length < 1 || key.length > 255) {
    throw new HttpError('INVALID_REQUEST', 'Idempotency-Key must be 1 to 255 characters', [{ field: 'Idempotency-Key', message: 'must be 1 to 255 characters' }]);
  }
  const { kv, clock } = req.ctx;
  const scope = `${req.apiKey.id}:${req.method}:${req.baseUrl}${req.path}:${key}`;
  const bodyHash = fingerprint(req.body ?? null);
  let running = inFlight.get(kv);
  if (!running) { running = new Map(); inFlight.set(kv, running); }
  while (running.has(scope)) await running.get(scope);
  const stored = await kv.get<StoredResponse>('idempotency', scope);
  if (stored) return replay(res, stored, bodyHash, key);
  let done!: () => void;
  running.set(scope, new Promise<void>((resolve) => { done = resolve; }));
  res.on('close', () => { running!.delete(scope); done(); });
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    if (res.statusCode < 500) {
      const record: StoredResponse = { bodyHash, status: res.statusCode, body, location: res.getHeader('Location') as string | undefined };
      void kv.put('idempotency', scope, record, clock.now().getTime() + IDEMPOTENCY_TTL_MS).finally(() => { running!.delete(scope); done(); });
    }
    return json(body);
  };
  next();
};

const replay = (res: Response, stored: StoredResponse, bodyHash: string, key: string): void => {
  if (stored.bodyHash !== bodyHash) {
    throw new HttpError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body', { idempotency_key: key });
  }
  if (stored.location) res.setHeader('Location', stored.location);
  res.setHeader('Idempotent-Replayed', 'true');
  res.status(stored.status).json(stored.body);
};
