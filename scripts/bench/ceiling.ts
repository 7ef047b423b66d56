/**
 * The bench's ceiling: a bare express app (the same express as the service) with one route that
 * parses a JSON body and answers a small JSON body. Run as a child of scripts/bench.ts:
 *   node --import tsx scripts/bench/ceiling.ts   (PORT, HOST from the environment)
 * Prints `ceiling listening <port>` once it accepts connections.
 *
 * Served as bare express apps usually are (`app.listen`), unless CEILING_SERVER=createHttpServer:
 * then on the service's own server (src/http/server.ts), whose requests keep one V8 hidden class.
 * The bench measures both: the first is the ceiling, the second what the same route does
 * without express's per-request `setPrototypeOf` cost.
 *
 * With CEILING_SYNC_FILE the route is durable: it answers once the request's body is written to
 * that file and the file is synced, with group commit (the bodies that arrive during one `fsync`
 * go in the next write and `fsync`). The writes and syncs run on libuv's thread pool, as SQLite's
 * run on the service's writer thread. That is the least a durable apply waits on this disk.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { DEFAULT_SERVER_LIMITS, createHttpServer } from '../../src/http/server.ts';
import { groupCommit } from './groupCommit.ts';

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json({ limit: 1_048_576, strict: true, type: 'application/json' }));
app.get('/health', (_req, res) => {
  res.json({ status: 'ok' });
});
const commit = process.env.CEILING_SYNC_FILE ? groupCommit(process.env.CEILING_SYNC_FILE) : undefined;
app.post('/ceiling', (req, res) => {
  const body = req.body as { order?: { value?: number } } | undefined;
  const answer = () => res.json({ ok: true, value: body?.order?.value ?? null });
  if (!commit) {
    answer();
    return;
  }
  void commit(Buffer.from(JSON.stringify(body ?? null))).then((ok) =>
    ok ? answer() : res.status(500).json({ ok: false }),
  );
});

const server = (process.env.CEILING_SERVER === 'createHttpServer' ? createHttpServer(app) : app).listen(
  Number(process.env.PORT ?? 0),
  process.env.HOST ?? '127.0.0.1',
  () => {
    process.stdout.write(`ceiling listening ${(server.address() as AddressInfo).port}\n`);
  },
);
server.keepAliveTimeout = DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs; // as the service's
// Nothing to flush: stop at once, even with keep-alive connections open.
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
