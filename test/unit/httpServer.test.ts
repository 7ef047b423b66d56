/**
 * createHttpServer (src/http/server.ts): requests and responses are born with the express app's
 * prototypes, so express's per-request `Object.setPrototypeOf` changes nothing, and V8 keeps one
 * hidden class and fast properties for all of them (scripts/hiddenClasses.ts, run in a child
 * process with V8's natives syntax).
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { expect } from 'chai';
import express from 'express';
import { createHttpServer } from '../../src/http/server.ts';
import { ROOT } from '../support/processes.ts';

describe('createHttpServer', function () {
  this.timeout(30_000);

  it("creates requests and responses with the app's prototypes, and express works on them as usual", async () => {
    const app = express();
    app.use(express.json());
    app.post('/echo', (req, res) => {
      res
        .status(201)
        .set('X-Seen', req.get('content-type') ?? '')
        .json({ value: (req.body as { value: number }).value, path: req.path });
    });
    const server = createHttpServer(app);
    const arrived: Array<{ request: boolean; response: boolean; incoming: boolean; outgoing: boolean }> = [];
    // Runs before express's handler: what Node built, before express set any prototype.
    server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      arrived.push({
        request: Object.getPrototypeOf(req) === app.request,
        response: Object.getPrototypeOf(res) === app.response,
        incoming: req instanceof http.IncomingMessage,
        outgoing: res instanceof http.ServerResponse,
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: 42 }),
      });
      expect(response.status).to.equal(201);
      expect(response.headers.get('x-seen')).to.equal('application/json');
      expect(await response.json()).to.deep.equal({ value: 42, path: '/echo' });
      expect(arrived).to.deep.equal([{ request: true, response: true, incoming: true, outgoing: true }]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('gives every request and response the hidden class of the one before, with fast properties (V8)', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', 'scripts/hiddenClasses.ts', 'createHttpServer'],
      { cwd: ROOT, timeout: 20_000 },
    );
    // With express's own app.listen no pair shares a hidden class (see the script).
    expect(JSON.parse(stdout.trim())).to.deep.equal({
      server: 'createHttpServer',
      pairs: 20,
      sameRequest: 20,
      sameResponse: 20,
      fastRequest: true,
      fastResponse: true,
    });
  });
});
