/** The webhook HTTP sender's connections: attempts in bursts reuse the connections of the burst before. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { createHttpSender } from '../../src/infrastructure/webhooks/httpSender.ts';

describe('webhook HTTP sender', () => {
  let server: http.Server;
  let connections = 0;
  let url = '';
  before(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      // answered together once the whole burst is in, so every attempt of a burst holds a connection
      req.on('end', () => setTimeout(() => res.writeHead(204).end(), 50));
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('keeps the connections of a burst of attempts open for the next burst', async () => {
    const send = createHttpSender();
    const burst = () =>
      Promise.all(
        Array.from({ length: 16 }, () =>
          send({
            url,
            headers: { 'content-type': 'application/json' },
            body: '{}',
            timeoutMs: 5_000,
            allowedCidrs: parseCidrs('127.0.0.0/8'),
          }),
        ),
      );
    const first = await burst();
    expect(first.map((r) => r.status)).to.deep.equal(Array(16).fill(204));
    expect(connections).to.equal(16);
    const second = await burst();
    expect(second.map((r) => r.status)).to.deep.equal(Array(16).fill(204));
    expect(connections, 'connections opened for the second burst').to.equal(16);
  });
});
