import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { ALL_SCOPES, hashKey, type ApiKeyRecord, type ApiKeyRegistry } from '../application/apiKeys.ts';

/** What authentication needs of the key registry. */
export type KeyLookup = Pick<ApiKeyRegistry, 'authenticate'>;

/**
 * A sandbox key that exists only in this process's memory, for the requests of `warmUp`, and only
 * until `close`: it is never stored, listed or logged, and it is closed before the service listens
 * on its port, so no caller from outside can ever present it.
 */
export class WarmUpKey {
  readonly key = `sk_test_${randomBytes(24).toString('hex').slice(0, 32)}`;
  readonly record: ApiKeyRecord;
  private open = true;

  constructor() {
    this.record = {
      id: 'key_warm_up',
      name: 'warm-up (in memory, before the service listens)',
      environment: 'sandbox',
      scopes: [...ALL_SCOPES],
      prefix: 'sk_test_',
      last4: this.key.slice(-4),
      hash: hashKey(this.key),
      createdAt: new Date(0).toISOString(),
      createdBy: 'system',
    };
  }

  /**
   * Whether `presented` is this key and it is still open: compared by the hash of what is
   * presented, as the registry looks keys up (ApiKeyRegistry.authenticate).
   */
  admits(presented: string): boolean {
    return this.open && hashKey(presented) === this.record.hash;
  }

  close(): void {
    this.open = false;
  }
}

/** The registry as authentication sees it, admitting `warmUp`'s key while that is open. */
export const admittingWarmUp = (keys: KeyLookup, warmUp: WarmUpKey): KeyLookup => ({
  authenticate: (presented) => (warmUp.admits(presented) ? warmUp.record : keys.authenticate(presented)),
});

/**
 * A code no voucher can have (codes are made of A-Z a-z 0-9 _ -; the dot is refused at creation),
 * so the warm-up's requests are answered VOUCHER_NOT_FOUND and change nothing.
 */
const WARM_UP_CODE = 'warm.up';
const ORDER = { value: 10_000, currency: 'USD', items: [{ id: 'warm.up', price: 10_000, quantity: 1 }] };

/** The requests of a warm-up: validate and apply, each answered 404 VOUCHER_NOT_FOUND. */
export const WARM_UP_REQUESTS: ReadonlyArray<{ path: string; body: object }> = [
  { path: '/v1/vouchers/validate', body: { code: WARM_UP_CODE, order: ORDER } },
  { path: '/v1/vouchers/apply', body: { code: WARM_UP_CODE, order_id: 'warm.up', order: ORDER } },
];

const post = (port: number, path: string, key: string, body: object): Promise<number> =>
  new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          connection: 'close',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error(`warm-up request ${path} took over 5 s`)));
    req.end(payload);
  });

/**
 * Answers WARM_UP_REQUESTS with `server` on a port of 127.0.0.1 of its own, closes that port, then
 * closes `key`. The first request a process answers runs the HTTP parser, express, authentication,
 * body parsing, validation, the command handler and the error rendering for the first time; after
 * a restart that made the first apply several times slower than the next (benchmark.md, "The first
 * apply after a restart"). A warm-up that fails is logged and the start goes on: it changes speed,
 * never behaviour. Resolves with how long it took, in ms.
 */
export const warmUp = async (server: http.Server, key: WarmUpKey, logger: Pick<Logger, 'warn'>): Promise<number> => {
  const started = performance.now();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    try {
      const { port } = server.address() as AddressInfo;
      for (const { path, body } of WARM_UP_REQUESTS) {
        const status = await post(port, path, key.key, body);
        if (status !== 404) logger.warn({ path, status }, 'warm-up request: expected 404 VOUCHER_NOT_FOUND');
      }
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  } catch (error) {
    logger.warn({ err: error }, 'warm-up of the request path failed; the service starts without it');
  } finally {
    key.close();
  }
  return performance.now() - started;
};
