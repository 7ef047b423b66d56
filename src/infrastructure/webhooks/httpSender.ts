/**
 * The HTTP side of a webhook attempt (decisions.md, Webhooks, Targets): resolve the URL's host at
 * every attempt (all its addresses), refuse every address in a refused range unless the operator
 * allows it by CIDR, connect to the checked address itself (the connection pool's origin is that
 * address, so DNS cannot change between the check and the connection), never follow a redirect,
 * give up after the timeout, and read at most a little of the answer.
 */
import dns from 'node:dns';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions } from 'node:tls';
import type * as Undici from 'undici';
import { lazyPackage } from '../../core/lazyPackage.ts';
import { parseRetryAfter, type SendRequest, type Sender } from '../../domain/webhooks/delivery.ts';
import { addressLiteral, refusedRange, type Cidr } from '../../domain/webhooks/targets.ts';

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

/**
 * The end of one attempt: the service stopping, or its deadline. An EventEmitter ('abort'): the
 * exchange aborts its request on it, a name's resolution races it. An AbortController and the
 * listeners on it cost 13 µs per attempt where this costs under 1 µs (decision 092).
 */
class AttemptEnd extends EventEmitter {
  /** Why the attempt ended, once it has. */
  reason: string | undefined;

  end(why: string): void {
    if (this.reason !== undefined) return;
    this.reason = why;
    this.emit('abort');
  }

  /** Rejects with Refused(the reason) once the attempt ends (at once if it has). */
  get ended(): Promise<never> {
    return new Promise((_resolve, reject) => {
      if (this.reason !== undefined) reject(new Refused(this.reason));
      else this.once('abort', () => reject(new Refused(this.reason!)));
    });
  }
}

/**
 * Calls `listener` once `signal` is aborted, through one listener of its own per signal (the
 * dispatcher passes the same signal to every attempt); returns what removes it again.
 */
const onAbortOf = (registry: WeakMap<AbortSignal, Set<() => void>>, signal: AbortSignal, listener: () => void) => {
  let listeners = registry.get(signal);
  if (!listeners) {
    const created = new Set<() => void>();
    registry.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        for (const f of created) f();
      },
      { once: true },
    );
    listeners = created;
  }
  listeners.add(listener);
  if (signal.aborted) listener();
  return () => listeners.delete(listener);
};

/** The first allowed address among `candidates`; throws Refused naming the refused ones. */
const firstAllowed = (hostname: string, candidates: ResolvedAddress[], request: SendRequest): ResolvedAddress => {
  if (candidates.length === 0) throw new Refused(`cannot resolve ${hostname}: no address`);
  const refused: string[] = [];
  for (const candidate of candidates) {
    const range = refusedRange(candidate.address, request.allowedCidrs);
    if (range === null) return candidate;
    refused.push(`${candidate.address} (${range})`);
  }
  throw new Refused(`refused target: ${hostname} resolves only to refused addresses: ${refused.join(', ')}`);
};

/** The address of a name, resolved now (all its addresses), vetted by `firstAllowed`; throws Refused. */
const vetName = async (hostname: string, request: SendRequest, resolve: Resolve): Promise<ResolvedAddress> => {
  const candidates = await resolve(hostname).catch((error: NodeJS.ErrnoException) => {
    throw new Refused(`cannot resolve ${hostname}: ${error.code ?? error.message}`);
  });
  return firstAllowed(hostname, candidates, request);
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

/** Parsed URLs and vetted address literals kept per sender, each up to this many (then started afresh). */
const MAX_CACHED = 1_024;

/** What an attempt needs of its URL: parsed once per URL string. */
interface ParsedUrl {
  url: URL;
  /** Path and query, as sent. */
  path: string;
  /** The host as an address literal (unbracketed), or null for a name, resolved at every attempt. */
  literal: string | null;
}

/** A POST's answer: its status and Retry-After header (the body is read up to a bound and not kept). */
interface Answer {
  status: number;
  retryAfter: string | undefined;
}

/**
 * One POST on `pool` through undici's dispatch API (decision 099): the answer's status and
 * Retry-After from its head, the body counted and dropped, and the connection dropped once it passes
 * MAX_RESPONSE_BYTES. `attempt`'s end aborts the exchange and settles it at once, also while the
 * request still waits for a connection of its pool (it is aborted when it would start, before
 * anything is sent). Rejects with the connection's error when no answer head came; an error after
 * the head keeps the status.
 */
const exchange = (
  pool: Undici.Pool,
  path: string,
  headers: Record<string, string>,
  body: string,
  attempt: AttemptEnd,
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    let answer: Answer | undefined;
    let received = 0;
    let settled = false;
    let controller: Undici.Dispatcher.DispatchController | undefined;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      attempt.off('abort', abort);
      if (answer) resolve(answer);
      else reject(error ?? new Error('no answer'));
    };
    // settles at once, even while the request waits in the pool's queue (it is aborted when it starts)
    const abort = () => {
      controller?.abort(new Refused(attempt.reason!));
      settle(new Refused(attempt.reason!));
    };
    attempt.once('abort', abort);
    pool.dispatch(
      { path, method: 'POST', headers, body },
      {
        onRequestStart: (started) => {
          controller = started;
          if (attempt.reason !== undefined) started.abort(new Refused(attempt.reason));
        },
        onResponseStart: (_controller, statusCode, responseHeaders) => {
          if (statusCode < 200) return; // 1xx: the answer comes after it
          const retryAfter = responseHeaders['retry-after'];
          answer = { status: statusCode, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
        },
        onResponseData: (current, chunk) => {
          received += chunk.length;
          if (received > MAX_RESPONSE_BYTES) current.abort(new Refused('answer longer than the bound'));
        },
        onResponseEnd: () => settle(),
        onResponseError: (_controller, error) => settle(error),
      },
    );
  });

export const createHttpSender = (resolve: Resolve = systemResolve, options: HttpSenderOptions = {}): Sender => {
  const pools = new Map<string, Undici.Pool>();
  const stopSignals = new WeakMap<AbortSignal, Set<() => void>>();
  const parsed = new Map<string, ParsedUrl>();
  /** Per list of allowed ranges: each address literal's vetted address, or why it is refused. */
  const vetted = new WeakMap<readonly Cidr[], Map<string, ResolvedAddress | string>>();
  const parse = (raw: string): ParsedUrl => {
    let known = parsed.get(raw);
    if (!known) {
      const url = new URL(raw);
      known = { url, path: `${url.pathname}${url.search}`, literal: addressLiteral(url.hostname) };
      if (parsed.size >= MAX_CACHED) parsed.clear();
      parsed.set(raw, known);
    }
    return known;
  };
  /** An address literal's target (pure for the same allowed ranges, so kept); throws Refused. */
  const vetLiteral = (hostname: string, literal: string, request: SendRequest): ResolvedAddress => {
    let byLiteral = vetted.get(request.allowedCidrs);
    if (!byLiteral) {
      byLiteral = new Map();
      vetted.set(request.allowedCidrs, byLiteral);
    }
    let outcome = byLiteral.get(literal);
    if (outcome === undefined) {
      try {
        outcome = firstAllowed(hostname, [{ address: literal, family: net.isIP(literal) }], request);
      } catch (error) {
        if (!(error instanceof Refused)) throw error;
        outcome = error.message;
      }
      if (byLiteral.size >= MAX_CACHED) byLiteral.clear();
      byLiteral.set(literal, outcome);
    }
    if (typeof outcome === 'string') throw new Refused(outcome);
    return outcome;
  };
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
    // One end for the whole attempt, the service stopping (while vetting or sending) or the
    // deadline; its reason says which came first.
    const attempt = new AttemptEnd();
    const unlisten = request.signal
      ? onAbortOf(stopSignals, request.signal, () => attempt.end('aborted: the service is stopping'))
      : undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      let url: URL;
      let path: string;
      let target: ResolvedAddress;
      try {
        const known = parse(request.url);
        url = known.url;
        path = known.path;
        // an address literal is vetted at once; a name waits for its resolution, or the attempt's end
        target = known.literal
          ? vetLiteral(url.hostname, known.literal, request)
          : await Promise.race([vetName(url.hostname, request, resolve), attempt.ended]);
        if (attempt.reason !== undefined) return { error: attempt.reason, durationMs: took() };
      } catch (error) {
        if (error instanceof Refused) return { error: error.message, durationMs: took() };
        throw error;
      }
      // the connection goes to the vetted address whatever the name resolves to now
      timer = setTimeout(() => attempt.end(`timeout: no answer within ${request.timeoutMs} ms`), request.timeoutMs);
      const headers = { ...request.headers, host: url.host };
      const { status, retryAfter } = await exchange(poolFor(url, target), path, headers, request.body, attempt);
      if (attempt.reason !== undefined) return { error: attempt.reason, durationMs: took() };
      const retryAfterMs = parseRetryAfter(retryAfter, new Date());
      return { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), durationMs: took() };
    } catch (error) {
      if (attempt.reason !== undefined) return { error: attempt.reason, durationMs: took() };
      // a system error by its code (ECONNREFUSED), one of undici's by its message ("other side closed")
      const { code, message } = error as NodeJS.ErrnoException;
      const why = code === undefined || code.startsWith('UND_ERR') ? message : code;
      return { error: `connection failed: ${why}`, durationMs: took() };
    } finally {
      clearTimeout(timer);
      unlisten?.();
    }
  };
};
