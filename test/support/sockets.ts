/** Raw TCP clients for tests of connection handling: what the server sent, and whether it closed. */
import net from 'node:net';

export interface SocketOutcome {
  /** Everything the server sent. */
  data: string;
  /** Whether the server closed the connection before the wait ended. */
  closed: boolean;
}

/** Connects to 127.0.0.1:`port`; resolves once connected. */
export const connect = (port: number): Promise<net.Socket> =>
  new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });

/**
 * Collects what `socket` receives until the server closes it, or until `waitMs` pass (then the
 * test's side closes it): a bounded wait, so a server that never closes fails the test instead
 * of hanging it. Resets and other socket errors count as closed.
 */
export const outcome = (socket: net.Socket, waitMs: number): Promise<SocketOutcome> =>
  new Promise((resolve) => {
    let data = '';
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
    });
    socket.on('error', () => {
      /* ECONNRESET: closed by the server */
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data, closed: false });
    }, waitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ data, closed: true });
    });
  });

/** Writes `byte` every `everyMs` until the socket closes: a body that trickles in. */
export const trickle = (socket: net.Socket, everyMs: number, byte = 'a'): void => {
  const timer = setInterval(() => {
    if (socket.writable) socket.write(byte);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
};
