/**
 * The HTTP side of a webhook attempt (decisions.md, Webhooks, Targets): resolve the URL's host at
 * every attempt (all its addresses), refuse every address in a refused range unless the operator
 * allows it by CIDR, connect to the checked address itself (the connection pool's origin is that
 * address, so DNS cannot change between the check and the connection), never follow a redirect,
 * give up after the timeout, and read at most a little of the answer.
 */
import dns from 'node:dns';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions } from 'node:tls';
import type * as Undici from 'undici';
import { lazyPackage } from '../../core/lazyPackage.ts';
import { parseRetryAfter, type SendRequest, type Sender } from '../../domain/webhooks/delivery.ts';
import { addressLiteral, refusedRange } from '../../domain/webhooks/targets.ts';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address of a host name (dns.lookup with `all`, as the system resolver answers it). */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolve: Resolve = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** Bytes of a receiver's answer read before the connection is dropped (the body is not kept). */
const MAX_RESPONSE_BYTES = 64 * 1024;

class Refused extends Error {}

/** Rejects with Refused(`reason()`) once `signal` is aborted (at once if it is already). */
const whenEnded = (signal: AbortSignal, reason: () => string): Promise<never> =>
  new Promise((_resolve, reject) => {
    const fail = () => reject(new Refused(reason()));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });

/** The address to connect to: the literal, or the first allowed address of the name; throws Refused. */
const vet = async (hostname: string, request: SendRequest, resolve: Resolve): Promise<ResolvedAddress> => {
  const literal = addressLiteral(hostname);
  const candidates = literal
    ? [{ address: literal, family: net.isIP(literal) }]
    : await resolve(hostname).catch((error: NodeJS.ErrnoException) => {
        throw new Refused(`cannot resolve ${hostname}: ${error.code ?? error.message}`);
      });
  if (candidates.length === 0) throw new Refused(`cannot resolve ${hostname}: no address`);
  const refused: string[] = [];
  for (const candidate of candidates) {
    const range = refusedRange(candidate.address, request.allowedCidrs);
    if (range === null) return candidate;
    refused.push(`${candidate.address} (${range})`);
  }
  throw new Refused(`refused target: ${hostname} resolves only to refused addresses: ${refused.join(', ')}`);
};

/**
 * Connection pools (undici), one per (scheme, vetted address, port, host name): a connection is
 * reused only to the address it was opened to, which this attempt has just vetted again. The pool's
 * origin is that address; the request names the host in its `host` header, which undici also
 * takes as the TLS server name, so https checks the certificate against the host name. A pool
 * keeps up to 16 connections, idle ones closed after 30 s. undici spends about a third of the CPU
 * of `node:http` per request (decision 070); it is loaded with the first pool.
 */
const MAX_POOLS = 256;
const CONNECTIONS_PER_POOL = 16;
const IDLE_MS = 30_000;

const undici = lazyPackage<typeof Undici>('undici');

export interface HttpSenderOptions {
  /** TLS options for the connections (a test's own certificate authority). */
  tls?: Pick<ConnectionOptions, 'ca'>;
}

export const createHttpSender = (resolve: Resolve = systemResolve, options: HttpSenderOptions = {}): Sender => {
  const pools = new Map<string, Undici.Pool>();
  const poolFor = (url: URL, target: ResolvedAddress): Undici.Pool => {
    const key = `${url.protocol}//${target.address}:${url.port}/${url.hostname}`;
    let pool = pools.get(key);
    if (!pool) {
      const host = target.family === 6 ? `[${target.address}]` : target.address;
      pool = new (undici().Pool)(`${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`, {
        connections: CONNECTIONS_PER_POOL,
        keepAliveTimeout: IDLE_MS,
        keepAliveMaxTimeout: IDLE_MS,
        // the attempt's own deadline bounds every phase; undici's timeouts stay out of its way
        headersTimeout: 0,
        bodyTimeout: 0,
        ...(options.tls ? { connect: { ...options.tls } } : {}),
      });
      if (pools.size >= MAX_POOLS) {
        const [oldest, old] = pools.entries().next().value!;
        old.destroy().catch(() => undefined);
        pools.delete(oldest);
      }
      pools.set(key, pool);
    }
    return pool;
  };
  return async (request) => {
    const started = performance.now();
    const took = () => performance.now() - started;
    const url = new URL(request.url);
    // One end for the whole attempt, the service stopping (while vetting or sending) or the
    // deadline; `ended` says which came first.
    const attempt = new AbortController();
    let ended: string | undefined;
    const end = (why: string) => {
      ended ??= why;
      attempt.abort();
    };
    const onStop = () => end('aborted: the service is stopping');
    request.signal?.addEventListener('abort', onStop);
    if (request.signal?.aborted) onStop();
    let timer: NodeJS.Timeout | undefined;
    try {
      let target: ResolvedAddress;
      try {
        target = await Promise.race([vet(url.hostname, request, resolve), whenEnded(attempt.signal, () => ended!)]);
      } catch (error) {
        if (error instanceof Refused) return { error: error.message, durationMs: took() };
        throw error;
      }
      // the connection goes to the vetted address whatever the name resolves to now
      timer = setTimeout(() => end(`timeout: no answer within ${request.timeoutMs} ms`), request.timeoutMs);
      const response = await poolFor(url, target).request({
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...request.headers, host: url.host },
        body: request.body,
        signal: attempt.signal,
      });
      const status = response.statusCode;
      const header = response.headers['retry-after'];
      const retryAfterMs = parseRetryAfter(Array.isArray(header) ? header[0] : header, new Date());
      // the body is read up to a bound, then the connection is dropped; an error reading it keeps the status
      await response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => undefined);
      if (ended !== undefined) return { error: ended, durationMs: took() };
      return { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), durationMs: took() };
    } catch (error) {
      if (ended !== undefined) return { error: ended, durationMs: took() };
      // a system error by its code (ECONNREFUSED), one of undici's by its message ("other side closed")
      const { code, message } = error as NodeJS.ErrnoException;
      const why = code === undefined || code.startsWith('UND_ERR') ? message : code;
      return { error: `connection failed: ${why}`, durationMs: took() };
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onStop);
    }
  };
};
