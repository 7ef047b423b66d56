/**
 * The webhook HTTP sender against local servers: connections reused across bursts, the answer's
 * body read only up to a bound, the deadline, a refused connection, and https checked against the
 * host name while connecting to the vetted address.
 */
import { getEventListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import selfsigned from 'selfsigned';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import type { SendRequest } from '../../src/domain/webhooks/delivery.ts';
import { createHttpSender, type Resolve } from '../../src/infrastructure/webhooks/httpSender.ts';

const LOOPBACK = parseCidrs('127.0.0.0/8');

const attempt = (url: string, timeoutMs = 5_000): SendRequest => ({
  url,
  headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
  body: '{"type":"voucher.applied"}',
  timeoutMs,
  allowedCidrs: LOOPBACK,
});

const listen = async (server: http.Server | https.Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

const close = (server: http.Server | https.Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

describe('webhook HTTP sender', () => {
  describe('over http', () => {
    let server: http.Server;
    let connections = 0;
    let base = '';
    const seen: Array<{ url: string; host: string; id: string; body: string }> = [];
    before(async () => {
      server = http.createServer((req, res) => {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (chunk: string) => (body += chunk));
        req.on('end', () => {
          seen.push({ url: req.url!, host: req.headers.host!, id: String(req.headers['webhook-id']), body });
          if (req.url === '/big') {
            // a megabyte of answer: the sender reads a little and drops the connection
            res.writeHead(200, { 'content-type': 'text/plain' });
            res.end(Buffer.alloc(1024 * 1024, 'x'));
          } else if (req.url === '/slow') setTimeout(() => res.writeHead(204).end(), 1_000);
          else if (req.url === '/hints') {
            // an interim 103 head first: the answer is the head after it
            res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
            res.writeHead(202).end();
          } else if (req.url === '/later') res.writeHead(503, { 'retry-after': '120' }).end();
          // answered together once the whole burst is in, so every attempt of a burst holds a connection
          else setTimeout(() => res.writeHead(204).end(), 50);
        });
      });
      server.on('connection', () => (connections += 1));
      base = `http://127.0.0.1:${await listen(server)}`;
    });
    after(() => close(server));

    it('sends the POST with its headers, body, path and query', async () => {
      seen.length = 0;
      const result = await createHttpSender()(attempt(`${base}/hook?shop=1`));
      expect(result.status).to.equal(204);
      expect(result.durationMs).to.be.a('number');
      expect(seen).to.deep.equal([
        { url: '/hook?shop=1', host: base.slice('http://'.length), id: 'msg_1', body: '{"type":"voucher.applied"}' },
      ]);
    });

    it('keeps the connections of a burst of attempts open for the next burst', async () => {
      const send = createHttpSender();
      const before = connections;
      const burst = () => Promise.all(Array.from({ length: 16 }, () => send(attempt(`${base}/hook`))));
      const first = await burst();
      expect(first.map((r) => r.status)).to.deep.equal(Array(16).fill(204));
      expect(connections - before).to.equal(16);
      const second = await burst();
      expect(second.map((r) => r.status)).to.deep.equal(Array(16).fill(204));
      expect(connections - before, 'connections opened for the second burst').to.equal(16);
    });

    it('takes the status of a long answer without reading all of it', async () => {
      const result = await createHttpSender()(attempt(`${base}/big`));
      expect(result).to.include({ status: 200 });
      expect(result.error).to.equal(undefined);
    });

    it('takes the final status after an interim 1xx head', async () => {
      const result = await createHttpSender()(attempt(`${base}/hints`));
      expect(result).to.include({ status: 202 });
    });

    it('refuses a loopback address every time without the allow-list, and sends to it with it', async () => {
      const send = createHttpSender();
      const seenBefore = seen.length;
      const refused = { ...attempt(`${base}/hook`), allowedCidrs: [] };
      const first = await send(refused);
      const again = await send({ ...refused, allowedCidrs: [] });
      expect([first.error, again.error]).to.deep.equal(
        Array(2).fill('refused target: 127.0.0.1 resolves only to refused addresses: 127.0.0.1 (loopback)'),
      );
      expect(seen.length).to.equal(seenBefore);
      expect((await send(attempt(`${base}/hook`))).status).to.equal(204);
      expect((await send(refused)).error).to.match(/^refused target/);
      expect(seen.length).to.equal(seenBefore + 1);
    });

    it('gives up at the deadline while waiting for a connection of its pool', async () => {
      const send = createHttpSender();
      seen.length = 0;
      // sixteen slow attempts hold every connection of the pool; the next waits in the pool's queue
      const holding = Array.from({ length: 16 }, () => send(attempt(`${base}/slow`)));
      const queued = await send(attempt(`${base}/queued`, 300));
      expect(queued.error).to.equal('timeout: no answer within 300 ms');
      expect(queued.durationMs).to.be.below(900);
      expect((await Promise.all(holding)).map((r) => r.status)).to.deep.equal(Array(16).fill(204));
      // once a connection is free the abandoned request is dropped, not sent
      expect((await send(attempt(`${base}/hook`))).status).to.equal(204);
      expect(seen.map((s) => s.url).filter((url) => url !== '/slow')).to.deep.equal(['/hook']);
    });

    it('gives Retry-After in milliseconds', async () => {
      const result = await createHttpSender()(attempt(`${base}/later`));
      expect(result).to.include({ status: 503, retryAfterMs: 120_000 });
    });

    it('gives up at the deadline', async () => {
      const result = await createHttpSender()(attempt(`${base}/slow`, 200));
      expect(result.status).to.equal(undefined);
      expect(result.error).to.equal('timeout: no answer within 200 ms');
      expect(result.durationMs).to.be.below(1_000);
    });

    it('ends an attempt in flight when the service stops', async () => {
      const stop = new AbortController();
      const pending = createHttpSender()({ ...attempt(`${base}/slow`), signal: stop.signal });
      setTimeout(() => stop.abort(), 50);
      expect((await pending).error).to.equal('aborted: the service is stopping');
    });

    it('ends an attempt still resolving its host when the service stops', async () => {
      const stop = new AbortController();
      const unanswered: Resolve = () => new Promise(() => undefined);
      const pending = createHttpSender(unanswered)({ ...attempt('http://hooks.test/hook'), signal: stop.signal });
      setTimeout(() => stop.abort(), 50);
      expect((await pending).error).to.equal('aborted: the service is stopping');
    });

    it('makes no connection once the service has stopped, to an address or to a name', async () => {
      const stop = new AbortController();
      stop.abort();
      seen.length = 0;
      const before = connections;
      const send = createHttpSender(async () => [{ address: '127.0.0.1', family: 4 }]);
      const byAddress = await send({ ...attempt(`${base}/hook`), signal: stop.signal });
      const byName = await send({ ...attempt(`http://hooks.test:${new URL(base).port}/hook`), signal: stop.signal });
      expect([byAddress.error, byName.error]).to.deep.equal(Array(2).fill('aborted: the service is stopping'));
      expect(connections - before).to.equal(0);
      expect(seen).to.deep.equal([]);
    });

    it('keeps one listener on the stop signal however many attempts share it, and ends those in flight', async () => {
      const stop = new AbortController();
      const send = createHttpSender();
      const done = await Promise.all(
        Array.from({ length: 20 }, () => send({ ...attempt(`${base}/hook`), signal: stop.signal })),
      );
      expect(done.map((r) => r.status)).to.deep.equal(Array(20).fill(204));
      expect(getEventListeners(stop.signal, 'abort').length).to.be.at.most(1);
      const inFlight = Array.from({ length: 3 }, () => send({ ...attempt(`${base}/slow`), signal: stop.signal }));
      setTimeout(() => stop.abort(), 50);
      expect((await Promise.all(inFlight)).map((r) => r.error)).to.deep.equal(
        Array(3).fill('aborted: the service is stopping'),
      );
    });

    it('names a refused connection by its code', async () => {
      const spare = http.createServer();
      const port = await listen(spare);
      await close(spare);
      const result = await createHttpSender()(attempt(`http://127.0.0.1:${port}/hook`));
      expect(result.error).to.equal('connection failed: ECONNREFUSED');
    });
  });

  describe('over https', () => {
    let server: https.Server;
    let ca = '';
    let port = 0;
    // every name resolves to the server's loopback address
    const resolve: Resolve = () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    before(async function () {
      this.timeout(20_000);
      const pems = await selfsigned.generate([{ name: 'commonName', value: 'hooks.test' }], {
        keySize: 2048,
        algorithm: 'sha256',
        extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'hooks.test' }] }],
      });
      ca = pems.cert;
      server = https.createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200, { 'x-host': req.headers.host ?? '' }).end());
      });
      port = await listen(server);
    });
    after(() => close(server));

    it('connects to the vetted address and checks the certificate against the host name', async () => {
      const send = createHttpSender(resolve, { tls: { ca } });
      expect(await send(attempt(`https://hooks.test:${port}/hook`))).to.include({ status: 200 });
    });

    it('refuses a certificate made for another name', async () => {
      const send = createHttpSender(resolve, { tls: { ca } });
      const result = await send(attempt(`https://other.test:${port}/hook`));
      expect(result.status).to.equal(undefined);
      expect(result.error).to.match(/^connection failed: ERR_TLS_CERT_ALTNAME_INVALID/);
    });

    it('refuses a certificate no known authority signed', async () => {
      const result = await createHttpSender(resolve)(attempt(`https://hooks.test:${port}/hook`));
      expect(result.status).to.equal(undefined);
      expect(result.error).to.match(/^connection failed: (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/);
    });
  });
});
