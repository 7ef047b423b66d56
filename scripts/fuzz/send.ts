/**
 * Sends a generated request and reads its answer: through node:http (a keep-alive agent) or, for
 * a raw request, written to a fresh socket as is. Only the first 64 KB of an answer are kept
 * (the rest is counted), so a huge answer cannot exhaust the fuzzer.
 */
import http from 'node:http';
import net from 'node:net';
import type { FuzzRequest } from './requests.ts';

const KEEP_BYTES = 64 * 1024;

export interface Outcome {
  /** The status; undefined when no answer came. */
  status?: number;
  headers?: http.IncomingHttpHeaders;
  /** The start of the body (or, raw: of everything the server sent). */
  body: string;
  bytes: number;
  ms: number;
  /** Why no answer came: `timeout`, or the socket error (`ECONNRESET`, `socket hang up`, ...). */
  error?: string;
}

export interface Target {
  host: string;
  port: number;
}

const collector = () => {
  const chunks: Buffer[] = [];
  let kept = 0;
  let bytes = 0;
  return {
    push(chunk: Buffer) {
      bytes += chunk.length;
      if (kept < KEEP_BYTES) {
        chunks.push(chunk.subarray(0, KEEP_BYTES - kept));
        kept += Math.min(chunk.length, KEEP_BYTES - kept);
      }
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
    get bytes() {
      return bytes;
    },
  };
};

/** Sends `request` through `agent`; resolves (never rejects) with what came back within `timeoutMs`. */
export const sendHttp = (
  request: FuzzRequest,
  target: Target,
  agent: http.Agent,
  timeoutMs: number,
): Promise<Outcome> =>
  new Promise((resolve) => {
    const started = performance.now();
    const body = collector();
    let done = false;
    const finish = (outcome: Omit<Outcome, 'ms' | 'body' | 'bytes'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...outcome, body: body.text(), bytes: body.bytes, ms: performance.now() - started });
    };
    const headers: Record<string, string | string[]> = { ...request.headers };
    if (request.body !== undefined) headers['Content-Length'] = String(request.body.length);
    let req: http.ClientRequest;
    try {
      req = http.request({
        host: target.host,
        port: target.port,
        method: request.method,
        path: request.path,
        headers,
        agent,
      });
    } catch (error) {
      // the client itself refused the request (an invalid header, say): nothing was sent
      done = true;
      resolve({ body: '', bytes: 0, ms: 0, error: `not sent: ${(error as Error).message}` });
      return;
    }
    const timer = setTimeout(() => {
      finish({ error: 'timeout' });
      req.destroy();
    }, timeoutMs);
    req.on('response', (res) => {
      res.on('data', (chunk: Buffer) => body.push(chunk));
      res.on('end', () => finish({ status: res.statusCode, headers: res.headers }));
      res.on('error', () => finish({ status: res.statusCode, headers: res.headers }));
      res.on('aborted', () => finish({ status: res.statusCode, headers: res.headers }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => finish({ error: error.code ?? error.message }));
    // a server that answers before the body is written (413, 415) may reset the rest: that is fine
    req.end(request.body);
  });

/** Status lines; the first final one (not 1xx, such as 100 Continue) is the answer's. */
const STATUS_LINES = /^HTTP\/1\.[01] (\d{3})/gm;

/**
 * Writes `request.raw` to a new connection and reads until the server closes it (raw requests
 * ask for Connection: close) or `timeoutMs` pass. The status is the first answer's.
 */
export const sendRaw = (request: FuzzRequest, target: Target, timeoutMs: number): Promise<Outcome> =>
  new Promise((resolve) => {
    const started = performance.now();
    const received = collector();
    let done = false;
    const socket = net.connect({ host: target.host, port: target.port });
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = received.text();
      const status = [...text.matchAll(STATUS_LINES)].map((m) => m[1]!).find((s) => !s.startsWith('1'));
      resolve({
        status: status === undefined ? undefined : Number(status),
        body: text,
        bytes: received.bytes,
        ms: performance.now() - started,
        error: status === undefined ? (error ?? 'closed without an answer') : undefined,
      });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('connect', () => socket.end(request.raw ?? Buffer.alloc(0)));
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code ?? error.message));
  });

/** The error code of a JSON error answer, if it is one. */
export const errorCodeOf = (outcome: Outcome): string | undefined => {
  try {
    const parsed = JSON.parse(outcome.body) as { error?: { code?: unknown } };
    return typeof parsed.error?.code === 'string' ? parsed.error.code : undefined;
  } catch {
    return undefined;
  }
};
