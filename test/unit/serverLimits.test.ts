/**
 * createHttpServer's limits (src/http/server.ts): connections that send nothing, bodies that
 * trickle in, sockets with no traffic and kept-alive connections are closed after the configured
 * times, and connections beyond the cap are refused. Small values keep the test quick; each wait
 * is bounded (several times the configured value), so a server that never closes fails the test.
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import {
  createHttpServer,
  DEFAULT_SERVER_LIMITS,
  warnOnDroppedConnections,
  type ServerLimits,
} from '../../src/http/server.ts';
import { connect, outcome, trickle } from '../support/sockets.ts';

const LIMITS: ServerLimits = {
  headersTimeoutMs: 300,
  requestTimeoutMs: 600,
  idleTimeoutMs: 400,
  keepAliveTimeoutMs: 200,
  maxConnections: 3,
};
const WAIT_MS = 4_000;

describe('createHttpServer limits', function () {
  this.timeout(20_000);
  let server: http.Server;
  let port: number;
  const dropped: number[] = [];

  before(async () => {
    const app = express();
    app.get('/ok', (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/hang', () => {
      /* never answers */
    });
    app.post('/echo', express.json(), (req, res) => {
      res.json(req.body);
    });
    // a body cut off by the request timeout reaches here as "request aborted": nobody to answer
    app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.destroy();
    });
    server = createHttpServer(app, LIMITS);
    warnOnDroppedConnections(server, (fields) => dropped.push(fields.dropped), 0);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const connections = () =>
    new Promise<number>((resolve, reject) => server.getConnections((error, n) => (error ? reject(error) : resolve(n))));

  it('sets the configured limits on the server', () => {
    expect(server).to.include({
      headersTimeout: 300,
      requestTimeout: 600,
      timeout: 400,
      keepAliveTimeout: 200,
      maxConnections: 3,
    });
  });

  it('answers 408 and closes a connection that sends nothing', async () => {
    const result = await outcome(await connect(port), WAIT_MS);
    expect(result.closed).to.equal(true);
    expect(result.data).to.match(/^HTTP\/1\.1 408 /);
  });

  it('cuts off a body that trickles in: 408 and close', async () => {
    const socket = await connect(port);
    socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n');
    trickle(socket, 50, ' '); // a byte every 50 ms: never idle, never complete
    const result = await outcome(socket, WAIT_MS);
    expect(result.closed).to.equal(true);
    expect(result.data).to.match(/^HTTP\/1\.1 408 /);
  });

  it('closes a socket with no traffic either way (a request nobody answers)', async () => {
    const socket = await connect(port);
    socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
    const result = await outcome(socket, WAIT_MS);
    expect(result).to.deep.equal({ data: '', closed: true });
  });

  it('closes a kept-alive connection after its keep-alive time', async () => {
    const socket = await connect(port);
    socket.write('GET /ok HTTP/1.1\r\nHost: x\r\n\r\n');
    const result = await outcome(socket, WAIT_MS);
    expect(result.closed).to.equal(true);
    expect(result.data).to.match(/^HTTP\/1\.1 200 /);
    expect(result.data).to.include('{"ok":true}');
  });

  it('refuses connections beyond the cap, and serves again once they are gone', async () => {
    const held = await Promise.all(Array.from({ length: 3 }, () => connect(port)));
    // the server counts a connection once it has accepted it: wait until it holds the three
    for (let i = 0; i < 100 && (await connections()) < 3; i += 1) await new Promise((r) => setTimeout(r, 10));
    expect(await connections()).to.equal(3);
    const before = dropped.length;
    const extra = await connect(port); // the TCP handshake completes; Node closes it at once
    const refused = await outcome(extra, WAIT_MS);
    expect(refused).to.deep.equal({ data: '', closed: true });
    expect(dropped.length).to.equal(before + 1);
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const res = await fetch(`http://127.0.0.1:${port}/ok`, { headers: { Connection: 'close' } });
    expect(res.status).to.equal(200);
  });

  it('has bounded defaults', () => {
    expect(DEFAULT_SERVER_LIMITS).to.deep.equal({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 30_000,
      keepAliveTimeoutMs: 65_000,
      maxConnections: 1_000,
    });
  });
});
