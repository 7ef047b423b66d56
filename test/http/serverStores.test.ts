/**
 * The service on its server adapters (EVENTSTORE_URL, MONGODB_URL), its HTTP behaviour end to
 * end: events on the EventStoreDB adapter, read models, key-value records, webhook deliveries
 * and the account's records on the MongoDB adapters. The servers are the in-memory stand-ins
 * (test/support/serverFakes.ts), not servers: these tests prove the wiring and the adapters'
 * logic, and docs/operations.md says how to run the service against real servers.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { RESTART_DELAY_MS } from '../../src/core/logConsumer.ts';
import { ApiKeyRegistry } from '../../src/application/apiKeys.ts';
import { EsdbEventStore } from '../../src/infrastructure/eventStore/esdbEventStore.ts';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { MongoKvStore } from '../../src/infrastructure/kvStore/mongoKvStore.ts';
import { MongoRateLimitStore } from '../../src/infrastructure/rateLimit/mongoRateLimitStore.ts';
import { indexKey } from '../../src/infrastructure/readStore/mongoFilter.ts';
import { indexesOf } from '../../src/core/projection.ts';
import { ANALYTICS_GROUP, PROJECTION_GROUPS } from '../../src/projections/index.ts';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { settle } from '../support/analyticsFixture.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { PRODUCTION_KEY, TestService, type TestResponse } from '../support/harness.ts';
import { fakeServers, type DownableEsdb, type DownableMongo } from '../support/serverFakes.ts';
import { until, WebhookReceiver } from '../support/webhookReceiver.ts';

/** Real time (standardwebhooks checks signatures' timestamps against it), settable like FakeClock. */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

const countBy = (responses: TestResponse[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const r of responses) {
    const key = r.status < 300 ? String(r.status) : `${r.status} ${r.body?.error?.code}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

describe('the service on EventStoreDB: APPLY_MODE=atomic', () => {
  it('stops the start: EventStoreDB has no atomic append to two streams', async () => {
    const { servers } = await fakeServers(new FakeClock());
    const failure = await TestService.start({ servers, applyMode: 'atomic' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(String(failure)).to.match(/APPLY_MODE=atomic needs an event store with an atomic multi-stream append/);
    await servers.close();
  });
});

describe('the service on EventStoreDB and MongoDB (in-memory stand-ins)', function () {
  this.timeout(30_000);
  let service: TestService;
  let servers: Awaited<ReturnType<typeof fakeServers>>['servers'];
  let esdb: DownableEsdb;
  let mongo: DownableMongo;
  let receiver: WebhookReceiver;

  before(async () => {
    const clock = new RealClock();
    ({ servers, esdb, mongo } = await fakeServers(clock));
    receiver = await WebhookReceiver.start();
    service = await TestService.start({
      clock,
      servers,
      webhooks: { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: [100, 200], timeoutMs: 1_000 },
    });
  });
  after(async () => {
    await service?.stop();
    await servers?.close();
    await receiver?.stop();
  });
  afterEach(() => {
    sinon.restore();
    esdb.restore();
    mongo.restore();
  });

  it('keeps each environment on its own stores: events in its stream namespace, read models in its database', () => {
    for (const env of ['sandbox', 'production'] as const) {
      const ctx = service.embedded.environments[env];
      expect(ctx.events).to.be.instanceOf(EsdbEventStore);
      expect((ctx.events as unknown as EsdbEventStore).streamName('voucher-x')).to.equal(`${env}.voucher-x`);
      expect(ctx.reads).to.be.instanceOf(MongoReadStore);
      expect(ctx.analyticsReads).to.be.instanceOf(MongoReadStore);
      expect(ctx.kv).to.be.instanceOf(MongoKvStore);
      expect(ctx.webhooks.deliveries?.store).to.be.instanceOf(MongoReadStore);
      // apply without an atomic append to two streams
      expect(ctx.applyMode).to.equal('two-append');
    }
    expect(service.embedded.account.events).to.be.instanceOf(EsdbEventStore);
    expect((service.embedded.account.events as unknown as EsdbEventStore).streamName('api-keys')).to.equal(
      'account.api-keys',
    );
    expect(service.embedded.account.kv).to.be.instanceOf(MongoKvStore);
    expect([...mongo.databases].sort()).to.deep.equal(['vouchers', 'vouchers_production', 'vouchers_sandbox']);
  });

  it("creates on start the indexes the projections declare and the TTL indexes, in each environment's database", () => {
    const keysOf = (collection: string) => mongo.memory.indexes(collection).map((i) => i.key);
    for (const env of ['sandbox', 'production'] as const) {
      const db = `vouchers_${env}`;
      for (const group of PROJECTION_GROUPS) {
        const prefix = group === ANALYTICS_GROUP ? 'analytics_' : '';
        const declared = indexesOf(group.projections).filter(([, fields]) => indexKey(fields) !== null);
        expect(declared, `${group.name} declares indexes`).to.not.be.empty;
        for (const [collection, fields] of declared)
          expect(keysOf(`${db}.${prefix}rm_${collection}`), `${env}: ${prefix}rm_${collection}`).to.deep.include(
            indexKey(fields),
          );
      }
      for (const collection of ['kv', 'kv_owners'])
        expect(mongo.memory.indexes(`${db}.${collection}`), `${env}: ${collection}`).to.deep.include({
          key: { expiresAt: 1 },
          options: { name: `${collection}_ttl`, expireAfterSeconds: 0 },
        });
    }
    expect(mongo.memory.indexes('vouchers.kv').map((i) => i.options.name)).to.include('kv_ttl');
  });

  it('gives the rate limiter a store per group on MongoDB, shared by every instance (the service passes it to createApp)', async () => {
    // The stand-in cannot run the store's update pipeline: its counting is checked at the driver
    // boundary (test/unit/mongoRateLimitStore.test.ts) and on a server by the contract suite;
    // here, what the service's factory builds.
    const storeFor = await servers.mongo!.rateLimitStores();
    expect(storeFor('validate')).to.be.instanceOf(MongoRateLimitStore);
    expect(storeFor('apply')).to.not.equal(storeFor('validate'));
  });

  it('voucher CRUD and listing read their own writes; sandbox and production never see each other', async () => {
    const created = await service.createVoucher(fixedVoucher('SRVCRUD', { value: 300 }));
    expect((await service.get(`/v1/vouchers/${created.id}`)).body).to.include({ code: 'SRVCRUD', value: 300 });
    const updated = await service.put(`/v1/vouchers/${created.id}`, { value: 350 });
    expect(updated.status).to.equal(200);
    expect((await service.get(`/v1/vouchers/${created.id}`)).body.value).to.equal(350);
    const listed = await service.get('/v1/vouchers?limit=100');
    expect(listed.body.data.map((v: { code: string }) => v.code)).to.include('SRVCRUD');
    expect((await service.get(`/v1/vouchers/${created.id}`, { key: PRODUCTION_KEY })).status).to.equal(404);
    const prodListed = await service.get('/v1/vouchers?limit=100', { key: PRODUCTION_KEY });
    expect(prodListed.body.data.map((v: { code: string }) => v.code)).to.not.include('SRVCRUD');
    expect((await service.delete(`/v1/vouchers/${created.id}`)).status).to.equal(200);
    expect((await service.get(`/v1/vouchers/${created.id}`)).body.status).to.equal('inactive');
  });

  it('validate, then 60 concurrent applies of a voucher with max_uses 20: exactly 20 succeed', async () => {
    const v = await service.createVoucher(fixedVoucher('SRVRACE', { value: 200, conditions: { max_uses: 20 } }));
    const validated = await service.post('/v1/vouchers/validate', validateBody('SRVRACE'));
    expect(validated.status).to.equal(200);
    expect(validated.body).to.include({ is_valid: true, discount_amount: 200 });
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => service.post('/v1/vouchers/apply', applyBody('SRVRACE', `srv-race-${i}`))),
    );
    expect(countBy(responses)).to.deep.equal({ 201: 20, '400 USAGE_LIMIT_EXCEEDED': 40 });
    expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(20);
    const applied = (await service.sandbox.events.readStream(`voucher-${v.id}`)).filter(
      (e) => e.type === 'VoucherApplied',
    );
    expect(applied).to.have.length(20);
    expect((await service.get(`/v1/vouchers/${v.id}/applications?limit=100`)).body.total).to.equal(20);
  });

  it('one Idempotency-Key under concurrency: one voucher, the same answer for all (records on MongoDB)', async () => {
    const headers = { 'Idempotency-Key': 'srv-idem-key' };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => service.post('/v1/vouchers', fixedVoucher('SRVIDEM'), { headers })),
    );
    expect(countBy(responses)).to.deep.equal({ 201: 8 });
    expect(new Set(responses.map((r) => r.body.id)).size).to.equal(1);
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).to.have.length(7);
    const created = (await service.sandbox.events.readAll()).filter(
      (e) => e.type === 'VoucherCreated' && (e.data as { code: string }).code === 'SRVIDEM',
    );
    expect(created).to.have.length(1);
  });

  it('analytics fold on the main thread into MongoDB', async () => {
    const day = new Date().toISOString().slice(0, 10);
    const v = await service.createVoucher(fixedVoucher('SRVSTATS', { value: 100 }));
    for (const i of [1, 2, 3]) {
      const res = await service.post('/v1/vouchers/apply', applyBody('SRVSTATS', `srv-stats-${i}`, { value: 1_000 }));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    }
    await settle(service);
    const res = await service.get(`/v1/analytics/vouchers/${v.id}/performance?start_date=${day}&end_date=${day}`);
    expect(res.status).to.equal(200);
    expect(res.body.performance).to.include({ total_uses: 3, total_discount: 300 });
  });

  it('delivers a webhook, recorded in the MongoDB deliveries store', async () => {
    const endpoint = await service.post('/v1/webhooks', { url: receiver.url('/srv'), events: ['voucher.created'] });
    expect(endpoint.status, JSON.stringify(endpoint.body)).to.equal(201);
    const v = await service.createVoucher(fixedVoucher('SRVHOOK'));
    await until(() => receiver.accepted('/srv').length >= 1, 'a delivery');
    expect(receiver.accepted('/srv')[0]!.json).to.deep.include({ type: 'voucher.created' });
    expect(receiver.accepted('/srv')[0]!.json.data.id).to.equal(v.id);
    await until(async () => {
      const deliveries = await service.get(`/v1/webhooks/${endpoint.body.id}/deliveries?limit=10`);
      return deliveries.body.data.some((d: { status: string }) => d.status === 'succeeded');
    }, 'the delivery recorded as succeeded');
  });

  it('EventStoreDB lost: writes answer 503 SERVICE_UNAVAILABLE with Retry-After; back: writes and projections resume', async () => {
    const before = await service.createVoucher(fixedVoucher('SRVDOWN1'));
    esdb.lose();
    const refused = await service.post('/v1/vouchers', fixedVoucher('SRVDOWN2'));
    expect(refused.status).to.equal(503);
    expect(refused.body.error).to.include({ code: 'SERVICE_UNAVAILABLE' });
    expect(refused.headers.get('retry-after')).to.equal('5');
    const apply = await service.post('/v1/vouchers/apply', applyBody('SRVDOWN1', 'srv-down-1'));
    expect(apply.status).to.equal(503);
    esdb.restore();
    // the projectors' subscriptions ended with the server: they subscribe again by themselves
    await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS + 200));
    const again = await service.post('/v1/vouchers', fixedVoucher('SRVDOWN2'));
    expect(again.status, JSON.stringify(again.body)).to.equal(201);
    expect((await service.get(`/v1/vouchers/${again.body.id}`)).body.code).to.equal('SRVDOWN2');
    await until(
      () => receiver.accepted('/srv').some((r) => r.json.data.code === 'SRVDOWN2'),
      'the webhook publisher subscribed again',
    );
    const applied = await service.post('/v1/vouchers/apply', applyBody('SRVDOWN1', 'srv-down-1'));
    expect(applied.status, JSON.stringify(applied.body)).to.equal(201);
    expect((await service.get(`/v1/vouchers/${before.id}`)).body.usage_count).to.equal(1);
    // the key registry follows the account namespace again: a key made elsewhere (the keys CLI) works
    const elsewhere = new ApiKeyRegistry(new EsdbEventStore(esdb.asClient(), { namespace: 'account' }), service.clock);
    await elsewhere.load();
    const { key } = await elsewhere.create('sandbox', 'made elsewhere');
    await until(
      async () => (await service.get('/v1/vouchers?limit=1', { key })).status === 200,
      'the new key accepted',
    );
  });

  it('MongoDB lost: writes and reads answer 503 with Retry-After, never 500; back: the service answers again', async () => {
    const v = await service.createVoucher(fixedVoucher('SRVMONGO'));
    mongo.lose();
    const idem = await service.post('/v1/vouchers', fixedVoucher('SRVMONGO2'), {
      headers: { 'Idempotency-Key': 'srv-mongo-down' },
    });
    expect(idem.status).to.equal(503);
    expect(idem.body.error).to.include({ code: 'SERVICE_UNAVAILABLE' });
    expect(idem.headers.get('retry-after')).to.equal('5');
    const read = await service.get(`/v1/vouchers/${v.id}`);
    expect(read.status).to.equal(503);
    // A write that needs only the event store is acknowledged: its read models follow later.
    const written = await service.post('/v1/vouchers', fixedVoucher('SRVMONGO3'));
    expect(written.status, JSON.stringify(written.body)).to.equal(201);
    mongo.restore();
    await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS + 200));
    expect((await service.get(`/v1/vouchers/${v.id}`)).status).to.equal(200);
    const created = await service.post('/v1/vouchers', fixedVoucher('SRVMONGO2'), {
      headers: { 'Idempotency-Key': 'srv-mongo-down' },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect((await service.get(`/v1/vouchers/${created.body.id}`)).body.code).to.equal('SRVMONGO2');
    // the projector and the webhook publisher caught up with what was written while it was down
    expect((await service.get(`/v1/vouchers/${written.body.id}`)).body.code).to.equal('SRVMONGO3');
    await until(
      () => receiver.accepted('/srv').some((r) => r.json.data.code === 'SRVMONGO3'),
      'the webhook of the voucher created while MongoDB was down',
    );
  });
});
