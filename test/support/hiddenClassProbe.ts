/**
 * Run by test/unit/httpServer.test.ts as `node --allow-natives-syntax --import tsx <this> <server>`,
 * `<server>` being `createHttpServer` (src/http/server.ts) or `listen` (express's own app.listen).
 *
 * An express app with a router, a JSON body and a middleware that adds properties to the request,
 * as the service's do. The first request is held in its handler; each of the next ones, on one
 * keep-alive connection, is compared with it in the same handler: does V8 give both the same
 * hidden class (%HaveSameMap)? Prints one JSON line `{ requests, sameRequest, sameResponse }` and
 * exits; everything listens on 127.0.0.1 and stops by itself.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createHttpServer } from '../../src/http/server.ts';

const REQUESTS = 20;
// V8's natives syntax is only parsed at run time (the flag is on), not by the TypeScript compiler.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const app = express();
app.use((req, _res, next) => { (req as unknown as Record<string, unknown>).requestId = `req_${Math.random()}`; next(); });
app.use(express.json());
const router = express.Router();
let held: [http.IncomingMessage, http.ServerResponse] | undefined;
let sameRequest = 0;
let sameResponse = 0;
router.post('/probe', (req, res) => {
  if (!held) { held = [req, res]; return; } // never answered: it stays as it is here
  if (haveSameMap(req, held[0])) sameRequest += 1;
  if (haveSameMap(res, held[1])) sameResponse += 1;
  res.json({ ok: true });
});
app.use('/v1', router);

const server = process.argv[2] === 'listen' ? app.listen(0, '127.0.0.1') : createHttpServer(app).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as AddressInfo;
const post = (agent?: http.Agent) => new Promise<void>((resolve, reject) => {
  const request = http.request({ host: '127.0.0.1', port, path: '/v1/probe', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (response) => {
    response.resume();
    response.on('end', resolve);
  });
  request.on('error', reject);
  request.end('{"order":{"value":100}}');
});
void post().catch(() => undefined); // the held one
while (!held) await new Promise((resolve) => setTimeout(resolve, 10));
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
for (let i = 0; i < REQUESTS; i += 1) await post(agent);
process.stdout.write(`${JSON.stringify({ requests: REQUESTS, sameRequest, sameResponse })}\n`);
process.exit(0);
