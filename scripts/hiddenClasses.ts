/**
 * Do successive requests share a V8 hidden class? A diagnostic for src/http/server.ts, and a test:
 *   node --allow-natives-syntax --import tsx scripts/hiddenClasses.ts [createHttpServer|listen]
 *
 * An express app with a router, a JSON body and a middleware that adds a property to the request,
 * as the service's do, served by `createHttpServer` (the default) or express's own `app.listen`.
 * Each request is held in its handler until the next one reaches the same point; then the two are
 * compared with V8's %HaveSameMap and the older one is answered. Prints one JSON line: how many
 * neighbouring pairs shared a hidden class, and whether the objects have fast (not dictionary)
 * properties. Everything listens on 127.0.0.1 and stops by itself.
 *
 * Seen on Node 20: with `listen`, no pair shares one. With `createHttpServer`, every pair does,
 * and both objects keep fast properties (test/unit/httpServer.test.ts runs this and expects so).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import { createHttpServer } from '../src/http/server.ts';

const REQUESTS = 21;
// V8's natives syntax is only parsed at run time (with the flag), not by the TypeScript compiler.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const hasFastProperties = new Function('a', 'return %HasFastProperties(a)') as (a: object) => boolean;

const app = express();
app.use((req, _res, next) => {
  (req as unknown as Record<string, unknown>).requestId = `req_${Math.random()}`;
  next();
});
app.use(express.json());
const router = express.Router();
let held: [Request, Response] | undefined;
const result = {
  server: process.argv[2] === 'listen' ? 'listen' : 'createHttpServer',
  pairs: 0,
  sameRequest: 0,
  sameResponse: 0,
  fastRequest: false,
  fastResponse: false,
};
router.post('/probe', (req, res) => {
  if (held) {
    result.pairs += 1;
    if (haveSameMap(req, held[0])) result.sameRequest += 1;
    if (haveSameMap(res, held[1])) result.sameResponse += 1;
    held[1].json({ ok: true });
  }
  held = [req, res];
  result.fastRequest = hasFastProperties(req);
  result.fastResponse = hasFastProperties(res);
});
app.use('/v1', router);

const server = result.server === 'listen' ? app.listen(0, '127.0.0.1') : createHttpServer(app).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as AddressInfo;
// Two keep-alive connections, used in turn: a request is sent while the one before is still held.
const agents = [new http.Agent({ keepAlive: true, maxSockets: 1 }), new http.Agent({ keepAlive: true, maxSockets: 1 })];
const post = (agent: http.Agent) =>
  new Promise<void>((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/probe',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json' },
      },
      (response) => {
        response.resume();
        response.on('end', resolve);
      },
    );
    request.on('error', reject);
    request.end('{"order":{"value":100}}');
  });
let previous = post(agents[0]!);
for (let i = 1; i < REQUESTS; i += 1) {
  const next = post(agents[i % 2]!);
  await previous; // answered once `next` reached the handler
  previous = next;
}
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
