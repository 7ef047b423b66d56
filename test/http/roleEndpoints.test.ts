/**
 * What each process role (ROLE) serves, on the server stores' in-memory stand-ins: the API only in
 * `api` (and `all`), the operator's endpoints with the role's own `/readyz` checks everywhere, and
 * webhook delivery split between a `publisher` and a `dispatcher` instance.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { storedCheckpoints } from '../../src/composition.ts';
import { roleFrom } from '../../src/config.ts';
import { InMemoryBroker, InMemoryBus } from '../../src/infrastructure/bus/inMemoryBus.ts';
import { ServiceMetrics } from '../../src/http/metrics.ts';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import type { WebhookSettings } from '../../src/application/webhooks/settings.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { TestService } from '../support/harness.ts';
import { fakeServers } from '../support/serverFakes.ts';
import { until, verify, WebhookReceiver } from '../support/webhookReceiver.ts';

/** Real time plus an offset (standardwebhooks checks timestamps against real time). */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

const webhookSettings = (): WebhookSettings => ({
  allowedCidrs: parseCidrs('127.0.0.0/8'),
  retryDelaysMs: [100, 150, 200],
  timeoutMs: 2_000,
});

const readyz = async (service: TestService) => {
  const res = await fetch(`${service.baseUrl}/readyz`);
  return {
    status: res.status,
    body: (await res.json()) as { status: string; failures?: Array<{ check: string; reason: string }> },
  };
};

describe('process roles: routes, /readyz and webhook delivery per role', function () {
  this.timeout(30_000);
  const started: TestService[] = [];
  let fakes: Awaited<ReturnType<typeof fakeServers>> | undefined;
  const start = async (options: Parameters<typeof TestService.start>[0]) => {
    const service = await TestService.start(options);
    started.push(service);
    return service;
  };
  afterEach(async () => {
    for (const service of started.splice(0).reverse()) await service.stop();
    await fakes?.servers.close();
    fakes = undefined;
  });

  it('projector, publisher and dispatcher serve only /healthz, /readyz and /metrics: an API route answers 404 in the spec’s shape; api serves the API', async () => {
    const clock = new FakeClock();
    fakes = await fakeServers(clock);
    const { servers } = fakes;
    const api = await start({ clock, servers, role: 'api' });
    expect((await api.get('/v1/vouchers')).status).to.equal(200);
    for (const role of ['projector', 'publisher', 'dispatcher'] as const) {
      const service = await start({ clock, servers, role });
      const res = await service.get('/v1/vouchers');
      expect(res.status, role).to.equal(404);
      expect(res.body.error.code, role).to.equal('NOT_FOUND');
      expect(res.body.error.message, role).to.match(/GET \/v1\/vouchers/);
      expect((await service.get('/v1/openapi.json')).status, role).to.equal(404);
      expect((await fetch(`${service.baseUrl}/healthz`)).status, role).to.equal(200);
      expect(await readyz(service), role).to.deep.equal({ status: 200, body: { status: 'ready' } });
    }
  });

  it('/readyz checks the role’s own stores and leases: dispatcher without the event store is ready, api is not; a stand-by projector is not ready', async () => {
    const clock = new FakeClock();
    fakes = await fakeServers(clock);
    const { servers, esdb } = fakes;
    const leases = { ttlMs: 15_000, timers: false };
    await start({ clock, servers, role: 'projector', leases: { ...leases, holder: 'first' } });
    const standBy = await start({ clock, servers, role: 'projector', leases: { ...leases, holder: 'second' } });
    const notReady = await readyz(standBy);
    expect(notReady.status).to.equal(503);
    expect(notReady.body.failures).to.deep.include({ check: 'sandbox.lease.core', reason: 'held by another process' });
    expect(notReady.body.failures).to.deep.include({
      check: 'sandbox.lease.analytics',
      reason: 'held by another process',
    });

    const api = await start({ clock, servers, role: 'api' });
    const dispatcher = await start({ clock, servers, role: 'dispatcher' });
    esdb.lose();
    try {
      expect(await readyz(dispatcher)).to.deep.equal({ status: 200, body: { status: 'ready' } });
      const apiAnswer = await readyz(api);
      expect(apiAnswer.status).to.equal(503);
      expect(apiAnswer.body.failures).to.deep.include({ check: 'sandbox.events', reason: 'unreachable' });
    } finally {
      esdb.restore();
    }
  });

  it('/readyz in the api role reads the core lag from the stored checkpoint: caught up after writes through another api instance, behind without a projector', async () => {
    const clock = new FakeClock();
    fakes = await fakeServers(clock);
    const { servers } = fakes;
    const ops = { readyMaxProjectorLag: 0, readyCheckTimeoutMs: 2_000 };
    const projector = await start({ clock, servers, role: 'projector' });
    const idle = await start({ clock, servers, role: 'api', ops });
    const writer = await start({ clock, servers, role: 'api', ops });
    for (const code of ['LAG-1', 'LAG-2'])
      expect((await writer.post('/v1/vouchers', fixedVoucher(code))).status).to.equal(201);
    // the idle instance waited for no write: only the stored checkpoint tells it the group caught up
    expect(await readyz(idle)).to.deep.equal({ status: 200, body: { status: 'ready' } });

    await projector.stop();
    started.splice(started.indexOf(projector), 1);
    const noProjector = await start({ clock, servers, role: 'api', ops, readYourWritesMs: 100 });
    expect((await noProjector.post('/v1/vouchers', fixedVoucher('LAG-3'))).status).to.equal(201);
    const behind = await readyz(idle);
    expect(behind.status).to.equal(503);
    expect(behind.body.failures).to.have.length(1); // only the sandbox environment was written to
    const core = behind.body.failures!.find((f) => f.check === 'sandbox.projector.core');
    expect(core?.reason).to.match(/^lag \d+ > 0 positions$/);
  });

  it('/metrics in a role reads projector_lag from the stored checkpoints: 0 on an api instance that made no write once the projector caught up', async () => {
    const clock = new FakeClock();
    fakes = await fakeServers(clock);
    const { servers } = fakes;
    await start({ clock, servers, role: 'projector' });
    const idle = await start({ clock, servers, role: 'api' });
    const writer = await start({ clock, servers, role: 'api' });
    expect((await writer.post('/v1/vouchers', fixedVoucher('METRIC-1'))).status).to.equal(201);
    const metrics = new ServiceMetrics();
    metrics.observe({ environments: idle.embedded.environments, storedCheckpoints });
    const text = await metrics.scrape();
    const lag = (group: string) =>
      Number(new RegExp(`^projector_lag\\{environment="sandbox",group="${group}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    expect(lag('core')).to.equal(0);
    expect(lag('analytics')).to.equal(0);
  });

  it('a publisher instance and a dispatcher instance together deliver a webhook, signed, to a receiver on 127.0.0.1; the publisher alone makes no attempt', async () => {
    const clock = new RealClock();
    fakes = await fakeServers(clock);
    const { servers } = fakes;
    const receiver = await WebhookReceiver.start();
    try {
      const common = { clock, servers, webhooks: webhookSettings(), webhookHooks: { random: () => 0.5 } };
      await start({ ...common, role: 'projector' });
      const api = await start({ ...common, role: 'api' });
      await start({ ...common, role: 'publisher' });
      const registered = await api.post('/v1/webhooks', { url: receiver.url('/roles'), events: ['voucher.created'] });
      expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
      const { id, secret } = registered.body as { id: string; secret: string };
      expect((await api.post('/v1/vouchers', fixedVoucher('HOOK-1'))).status).to.equal(201);
      // the publisher makes the delivery; nobody attempts it yet
      await until(async () => {
        const res = await api.get(`/v1/webhooks/${id}/deliveries`);
        return (res.body.data as unknown[]).length === 1;
      }, 'the delivery made by the publisher');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.received).to.have.length(0);

      await start({ ...common, role: 'dispatcher' });
      await until(() => receiver.accepted('/roles').length === 1, 'the webhook attempted by the dispatcher');
      const [got] = receiver.accepted('/roles');
      expect(() => verify(secret, got!)).to.not.throw();
      expect(got!.json.type).to.equal('voucher.created');
      expect(got!.json.data.code).to.equal('HOOK-1');
    } finally {
      await receiver.stop();
    }
  });

  it('through the bus: the publisher instance produces to the topic and makes no delivery; the dispatcher instance consumes it into a delivery and attempts it', async () => {
    const clock = new RealClock();
    fakes = await fakeServers(clock);
    const { servers } = fakes;
    const receiver = await WebhookReceiver.start();
    const broker = new InMemoryBroker();
    const buses = [new InMemoryBus({ broker }), new InMemoryBus({ broker })];
    for (const bus of buses) await bus.start(['sandbox', 'production']);
    const published = sinon.spy(buses[0]!, 'publish');
    try {
      const common = { clock, servers, webhooks: webhookSettings(), webhookHooks: { random: () => 0.5 } };
      await start({ ...common, role: 'projector' });
      const api = await start({ ...common, role: 'api' });
      await start({ ...common, role: 'publisher', webhookBus: buses[0] });
      const registered = await api.post('/v1/webhooks', { url: receiver.url('/bus'), events: ['voucher.created'] });
      expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
      const { id, secret } = registered.body as { id: string; secret: string };
      expect((await api.post('/v1/vouchers', fixedVoucher('BUS-1'))).status).to.equal(201);
      await until(() => published.calledWith('sandbox'), 'the voucher event on the topic');
      expect(
        (await api.get(`/v1/webhooks/${id}/deliveries`)).body.data,
        'no delivery before a dispatcher',
      ).to.have.length(0);

      await start({ ...common, role: 'dispatcher', webhookBus: buses[1] });
      await until(() => receiver.accepted('/bus').length === 1, 'the webhook consumed and attempted by the dispatcher');
      const [got] = receiver.accepted('/bus');
      expect(() => verify(secret, got!)).to.not.throw();
      expect(got!.json.data.code).to.equal('BUS-1');
      expect((await api.get(`/v1/webhooks/${id}/deliveries`)).body.data).to.have.length(1);
    } finally {
      published.restore();
      for (const bus of buses) await bus.close();
      await receiver.stop();
    }
  });

  it('ROLE accepts publisher (with both servers) and names it among the roles', () => {
    const servers = { EVENTSTORE_URL: 'esdb://127.0.0.1:2113?tls=false', MONGODB_URL: 'mongodb://127.0.0.1:27017/v' };
    expect(roleFrom({ ROLE: 'publisher', ...servers })).to.equal('publisher');
    expect(() => roleFrom({ ROLE: 'pub', ...servers })).to.throw(
      'ROLE must be one of all, api, projector, publisher, dispatcher, got "pub"',
    );
  });
});
