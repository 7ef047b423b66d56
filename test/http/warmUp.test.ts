/**
 * The warm-up of the request path before the service listens (src/http/warmUp.ts): its requests
 * run through the whole app with a key that exists only in memory, change nothing, and the key is
 * refused once the service listens.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import sinon from 'sinon';
import type { ApiKeyRecord } from '../../src/application/apiKeys.ts';
import { admittingWarmUp, warmUp, WarmUpKey, WARM_UP_REQUESTS } from '../../src/http/warmUp.ts';
import { createLogger } from '../../src/logger.ts';
import { validateBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';

describe('warm-up of the request path before listening', function () {
  describe('on the whole service', function () {
    let service: TestService;
    let key: WarmUpKey;
    let lines: Array<Record<string, unknown>>;

    before(async function () {
      lines = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of chunk.toString().split('\n').filter(Boolean))
            lines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      });
      key = new WarmUpKey();
      service = await TestService.start({ logger: createLogger('info', sink), warmUpKey: key });
    });
    after(async function () {
      await service.stop();
    });

    it('answers each warm-up request through authentication, validation and the handler: 404 VOUCHER_NOT_FOUND, nothing written', async function () {
      const requests = lines.filter((l) => l.msg === 'request');
      expect(requests.map((l) => [l.path, l.status, l.error_code, l.key_id, l.environment])).to.deep.equal(
        WARM_UP_REQUESTS.map((r) => [r.path, 404, 'VOUCHER_NOT_FOUND', 'key_warm_up', 'sandbox']),
      );
      expect(lines.filter((l) => Number(l.level) >= 40)).to.deep.equal([]);
      expect(await service.sandbox.events.headPosition()).to.equal(0);
      expect(await service.production.events.headPosition()).to.equal(0);
      // the key is in no list of keys
      expect(service.embedded.keys.list().map((k) => k.id)).to.not.include('key_warm_up');
    });

    it('refuses the warm-up key once the service listens (401 INVALID_API_KEY), and serves its own keys', async function () {
      const refused = await service.post('/v1/vouchers/validate', validateBody('WARM1', { value: 1_000 }), {
        key: key.key,
      });
      expect(refused.status).to.equal(401);
      expect(refused.body.error.code).to.equal('INVALID_API_KEY');
      expect((await service.post('/v1/vouchers', fixedVoucher('WARM1'))).status).to.equal(201);
      expect((await service.post('/v1/vouchers/validate', validateBody('WARM1', { value: 1_000 }))).status).to.equal(
        200,
      );
    });
  });

  describe('the key', function () {
    const stored = { id: 'key_stored' } as ApiKeyRecord;

    it('admits only itself, and only until it is closed; any other key goes to the registry', function () {
      const key = new WarmUpKey();
      const registry = {
        authenticate: sinon.stub().callsFake((k: string) => (k === 'sk_test_stored' ? stored : undefined)),
      };
      const keys = admittingWarmUp(registry, key);
      expect(keys.authenticate(key.key)).to.equal(key.record);
      expect(keys.authenticate('sk_test_stored')).to.equal(stored);
      expect(keys.authenticate(`${key.key}x`)).to.equal(undefined);
      expect(registry.authenticate.calledWith(key.key)).to.equal(false);
      key.close();
      expect(keys.authenticate(key.key)).to.equal(undefined);
      expect(new WarmUpKey().key).to.not.equal(key.key);
    });
  });

  describe('when the app does not answer as expected', function () {
    it('logs a warning per unexpected answer, closes its port and the key, and the server can listen again', async function () {
      const server = http.createServer((_req, res) => {
        res.statusCode = 500;
        res.end();
      });
      const key = new WarmUpKey();
      const logger = { warn: sinon.spy() };
      await warmUp(server, key, logger);
      expect(logger.warn.callCount).to.equal(WARM_UP_REQUESTS.length);
      expect(logger.warn.firstCall.args[0]).to.deep.equal({ path: WARM_UP_REQUESTS[0]!.path, status: 500 });
      expect(server.listening).to.equal(false);
      expect(key.admits(key.key)).to.equal(false);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        expect((server.address() as AddressInfo).port).to.be.above(0);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('goes on when its port cannot be opened: one warning, the key closed', async function () {
      const server = http.createServer();
      const listen = sinon.stub(server, 'listen').callsFake(() => {
        setImmediate(() => server.emit('error', new Error('listen EACCES')));
        return server;
      });
      const key = new WarmUpKey();
      const logger = { warn: sinon.spy() };
      await warmUp(server, key, logger);
      expect(listen.calledOnce).to.equal(true);
      expect(logger.warn.calledOnce).to.equal(true);
      expect(String(logger.warn.firstCall.args[0].err)).to.include('EACCES');
      expect(key.admits(key.key)).to.equal(false);
    });
  });
});
