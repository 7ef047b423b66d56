/**
 * The HTTP side of a webhook attempt (decisions.md, Webhooks, Targets): resolve the URL's host at
 * every attempt (all its addresses), refuse every address in a refused range unless the operator
 * allows it by CIDR, connect to the checked address itself (the request's `lookup` answers with
 * it, so DNS cannot change between the check and the connection), never follow a redirect, give
 * up after the timeout, and read at most a little of the answer.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { LookupFunction } from 'node:net';
import { parseRetryAfter, type SendRequest, type SendResult, type Sender } from '../../domain/webhooks/delivery.ts';
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
 * Keep-alive agents, one per (scheme, vetted address, port, host name): a connection is reused only
 * to the address it was opened to, which this attempt has just vetted again. An agent keeps as
 * many idle connections as it may open (16), so attempts that come in bursts reuse them instead
 * of closing all but a few after each burst and connecting again; idle ones close after 30 s.
 */
const MAX_AGENTS = 256;

export const createHttpSender = (resolve: Resolve = systemResolve): Sender => {
  const agents = new Map<string, http.Agent>();
  const agentFor = (url: URL, target: ResolvedAddress): http.Agent => {
    const key = `${url.protocol}//${target.address}:${url.port}/${url.hostname}`;
    let agent = agents.get(key);
    if (!agent) {
      const options = { keepAlive: true, maxSockets: 16, maxFreeSockets: 16, timeout: 30_000 };
      agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
      if (agents.size >= MAX_AGENTS) {
        const [oldest, old] = agents.entries().next().value!;
        old.destroy();
        agents.delete(oldest);
      }
      agents.set(key, agent);
    }
    return agent;
  };
  return async (request) => {
    const started = performance.now();
    const took = () => performance.now() - started;
    const url = new URL(request.url);
    let target: ResolvedAddress;
    let onStop: (() => void) | undefined;
    try {
      const stopping = new Promise<never>((_resolve, reject) => {
        onStop = () => reject(new Refused('aborted: the service is stopping'));
        request.signal?.addEventListener('abort', onStop, { once: true });
      });
      target = await Promise.race([vet(url.hostname, request, resolve), stopping]);
    } catch (error) {
      if (error instanceof Refused) return { error: error.message, durationMs: took() };
      throw error;
    } finally {
      if (onStop) request.signal?.removeEventListener('abort', onStop);
    }
    // the connection goes to the vetted address whatever the name resolves to now
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, [target]);
      else (callback as (e: null, a: string, f: number) => void)(null, target.address, target.family);
    };
    return new Promise<SendResult>((done) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        request.signal?.removeEventListener('abort', onAbort);
        done({ ...result, durationMs: took() });
      };
      const client = url.protocol === 'https:' ? https : http;
      const req = client.request(url, {
        method: 'POST',
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        lookup: pinned,
        agent: agentFor(url, target),
      });
      const timer = setTimeout(() => {
        finish({ error: `timeout: no answer within ${request.timeoutMs} ms` });
        req.destroy();
      }, request.timeoutMs);
      const onAbort = () => {
        finish({ error: 'aborted: the service is stopping' });
        req.destroy();
      };
      request.signal?.addEventListener('abort', onAbort);
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const retryAfterMs = parseRetryAfter(res.headers['retry-after'], new Date());
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) {
            finish({ status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
            res.destroy();
          }
        });
        res.on('end', () => finish({ status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }));
        res.on('error', () => finish({ status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }));
      });
      req.on('error', (error: NodeJS.ErrnoException) =>
        finish({ error: `connection failed: ${error.code ?? error.message}` }),
      );
      req.end(request.body);
    });
  };
};
