/**
 * A webhook receiver on 127.0.0.1 for tests: records every request (headers, raw body) and every
 * connection, and answers as the test says per path: a status (with headers), or `hang` (never
 * answers), or `slow` (answers 200 after `ms`).
 */
import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

export type Answer =
  number | { status: number; headers?: Record<string, string> } | 'hang' | { slowMs: number; status: number };

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  /** What the receiver answered (undefined for `hang`). */
  answered?: number;
  /** The ids of the event the request carried, and of its voucher. */
  eventId: string;
  voucherId?: string;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  connections = 0;
  /** Requests being answered now, and the most at once. */
  open = 0;
  maxOpen = 0;
  private readonly answers = new Map<string, (r: Received, attempt: number) => Answer>();
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => receiver.handle(req.url ?? '/', req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    const receiver = new WebhookReceiver(server);
    server.on('connection', (socket: Socket) => {
      receiver.connections += 1;
      receiver.sockets.add(socket);
      socket.on('close', () => receiver.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** How `path` answers; `attempt` counts the requests carrying the same webhook-id (1 for the first). */
  answer(path: string, how: Answer | ((r: Received, attempt: number) => Answer)): void {
    this.answers.set(path, typeof how === 'function' ? how : () => how);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Requests of `path` answered with a 2xx. */
  accepted(path: string): Received[] {
    return this.at(path).filter((r) => r.answered !== undefined && r.answered >= 200 && r.answered < 300);
  }

  private handle(path: string, headers: IncomingHttpHeaders, body: string, res: http.ServerResponse): void {
    let json: any;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const eventId = String(headers['webhook-id'] ?? '');
    this.open += 1;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    res.on('close', () => {
      this.open -= 1;
    });
    const record: Received = { path, headers, body, json, eventId, voucherId: json?.data?.id };
    const attempt = this.received.filter((r) => r.path === path && r.eventId === eventId).length + 1;
    this.received.push(record);
    const how = (this.answers.get(path) ?? (() => 200))(record, attempt);
    if (how === 'hang') return;
    if (typeof how === 'object' && 'slowMs' in how) {
      setTimeout(() => {
        record.answered = how.status;
        res.writeHead(how.status).end('ok');
      }, how.slowMs);
      return;
    }
    const { status, headers: out } = typeof how === 'number' ? { status: how, headers: {} } : how;
    record.answered = status;
    res.writeHead(status, out).end('ok');
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Verifies a received request with the standardwebhooks package (throws when it does not verify). */
export const verify = (secret: string, r: Received): unknown =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });

/** Polls until `check` returns true (a wait, not an assertion on time); fails with `what` after `ms`. */
export const until = async (check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
