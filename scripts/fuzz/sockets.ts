/**
 * Slow and idle sockets: connections that send nothing, stop halfway through their headers,
 * trickle headers or a body a byte at a time, stay open after an answer, or stop reading their
 * answers. None is answered in time by design; each must be closed by the server's own timeouts
 * before its deadline, else it is a finding (a service that keeps such sockets runs out of file
 * handles when someone opens enough of them).
 */
import net from 'node:net';

export const SOCKET_KINDS = [
  'socket/idle',
  'socket/partial-headers',
  'socket/trickle-headers',
  'socket/trickle-body',
  'socket/keep-alive',
  'socket/no-read',
] as const;
export type SocketKind = (typeof SOCKET_KINDS)[number];

export interface SocketProbe {
  kind: SocketKind;
  /** When the server closed it, ms after connecting; undefined: still open at the deadline. */
  closedAfterMs?: number;
  /** The first line the server sent, if any (a 408, say). */
  firstLine?: string;
  /** How the probe failed to connect, if it did. */
  error?: string;
}

const TRICKLE_MS = 200;

/**
 * Opens one slow socket of `kind` against `host:port` and resolves once the server closes it, or
 * at `deadlineMs` (then destroyed by the fuzzer and reported as not closed). `stop` ends it early.
 */
export const probeSocket = (
  kind: SocketKind,
  target: { host: string; port: number },
  key: string,
  deadlineMs: number,
  stop: AbortSignal,
): Promise<SocketProbe> =>
  new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect({ host: target.host, port: target.port });
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    let trickle: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (closedByServer: boolean, error?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(trickle);
      stop.removeEventListener('abort', onStop);
      socket.destroy();
      const firstLine = received.split('\r\n', 1)[0] || undefined;
      resolve({
        kind,
        closedAfterMs: closedByServer ? performance.now() - started : undefined,
        firstLine,
        ...(error ? { error } : {}),
      });
    };
    const onStop = () => finish(false, 'stopped');
    stop.addEventListener('abort', onStop);
    const write = (data: string) => {
      if (!socket.destroyed && socket.writable) socket.write(data);
    };
    const trickleBytes = (text: string) => {
      let at = 0;
      trickle = setInterval(() => write(text[at++ % text.length]!), TRICKLE_MS);
    };
    socket.on('connect', () => {
      const auth = `Authorization: Bearer ${key}\r\n`;
      switch (kind) {
        case 'socket/idle':
          break;
        case 'socket/partial-headers':
          write('POST /v1/vouchers/validate HTTP/1.1\r\nHost: fuzz\r\n');
          break;
        case 'socket/trickle-headers':
          write('GET /v1/vouchers HTTP/1.1\r\n');
          trickleBytes('X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n');
          break;
        case 'socket/trickle-body':
          write(
            `POST /v1/vouchers/validate HTTP/1.1\r\nHost: fuzz\r\n${auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"code":"`,
          );
          trickleBytes('A');
          break;
        case 'socket/keep-alive':
          write('GET /health HTTP/1.1\r\nHost: fuzz\r\n\r\n');
          break;
        case 'socket/no-read':
          // answers pile up unread: the server's writes back up until its idle timeout
          socket.pause();
          write(`GET /v1/openapi.json HTTP/1.1\r\nHost: fuzz\r\n${auth}\r\n`.repeat(200));
          break;
      }
    });
    socket.on('data', (chunk: Buffer) => {
      if (received.length < 200) received += chunk.toString('latin1');
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      // a reset or broken pipe is the server closing; a refused connection is not
      error.code === 'ECONNREFUSED' ? finish(false, error.code) : finish(true),
    );
    timer = setTimeout(() => {
      if (kind !== 'socket/no-read') return finish(false);
      // a paused socket sees no 'end': read what is left; a closed one ends at once
      clearInterval(trickle);
      socket.resume();
      timer = setTimeout(() => finish(false), 2_000);
    }, deadlineMs);
  });
