/**
 * Process roles (ROLE) on the server stores' in-memory stand-ins: several service instances in
 * this process, each with its own role, sharing one pair of fake servers as separate processes
 * share the real ones.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { RoleGroup, webhookRunnerOf } from '../../src/composition.ts';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { CORE_GROUP } from '../../src/projections/index.ts';
import { FencedWriteError } from '../../src/core/readStore.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { TestService } from '../support/harness.ts';
import { exitWithin, freePort, run } from '../support/processes.ts';
import { fakeServers } from '../support/serverFakes.ts';
import { until } from '../support/webhookReceiver.ts';

const coreOf = (service: TestService): RoleGroup => {
  const projector = service.embedded.environments.sandbox.projector;
  expect(projector).to.be.instanceOf(RoleGroup);
  return projector as RoleGroup;
};

const codesListed = async (service: TestService): Promise<string[]> => {
  const res = await service.get('/v1/vouchers?limit=100');
  expect(res.status).to.equal(200);
  return (res.body.data as Array<{ code: string }>).map((v) => v.code);
};

describe('process roles (ROLE) sharing the server stores', function () {
  this.timeout(30_000);
  const started: TestService[] = [];
  let servers: Awaited<ReturnType<typeof fakeServers>>['servers'] | undefined;
  const start = async (options: Parameters<typeof TestService.start>[0]) => {
    const service = await TestService.start(options);
    started.push(service);
    return service;
  };
  afterEach(async () => {
    sinon.restore();
    for (const service of started.splice(0).reverse()) await service.stop();
    await servers?.close();
    servers = undefined;
  });

  it('an api instance answers a write once the projector instance has projected it: read back at once from the api', async () => {
    const clock = new FakeClock();
    ({ servers } = await fakeServers(clock));
    await start({ clock, servers, role: 'projector' });
    // the projector's writes take a while, as across processes: the api must wait for them
    const write = MongoReadStore.prototype.writeBatch;
    sinon.replace(MongoReadStore.prototype, 'writeBatch', async function (this: MongoReadStore, batch) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return write.call(this, batch);
    });
    const api = await start({ clock, servers, role: 'api' });
    for (const code of ['RYW-1', 'RYW-2', 'RYW-3']) {
      expect((await api.post('/v1/vouchers', fixedVoucher(code))).status).to.equal(201);
      expect(await codesListed(api), 'listed right after the 201').to.include(code);
    }
  });

  it('the api role runs no projection group: without a projector instance, its writes wait READ_YOUR_WRITES_MS and the checkpoint stays', async () => {
    const clock = new FakeClock();
    ({ servers } = await fakeServers(clock));
    const api = await start({ clock, servers, role: 'api', readYourWritesMs: 200 });
    const env = api.embedded.environments.sandbox;
    expect(coreOf(api).runner, 'no leased core group').to.equal(undefined);
    expect((env.analytics as RoleGroup).runner, 'no leased analytics group').to.equal(undefined);
    expect(env.webhooks.publisher, 'no webhook publisher').to.equal(undefined);
    expect((await api.post('/v1/vouchers', fixedVoucher('NOPROJ'))).status).to.equal(201);
    expect(await env.reads.getCheckpoint(CORE_GROUP.checkpoint)).to.equal(0);
    expect(await codesListed(api)).to.not.include('NOPROJ');
  });

  it('two projector instances: one holds the lease and writes; the other takes over once it stops renewing; the former holder’s late write is refused', async () => {
    const clock = new FakeClock();
    ({ servers } = await fakeServers(clock));
    const leases = { ttlMs: 15_000, timers: false };
    const first = await start({ clock, servers, role: 'projector', leases: { ...leases, holder: 'first' } });
    const second = await start({ clock, servers, role: 'projector', leases: { ...leases, holder: 'second' } });
    const api = await start({ clock, servers, role: 'api' });
    const a = coreOf(first).runner!;
    const b = coreOf(second).runner!;
    expect([a.active, b.active]).to.deep.equal([true, false]);
    const reads = api.embedded.environments.sandbox.reads;

    expect((await api.post('/v1/vouchers', fixedVoucher('LEASE-1'))).status).to.equal(201);
    const afterFirst = await reads.getCheckpoint(CORE_GROUP.checkpoint);
    expect(afterFirst).to.be.greaterThan(0);

    // the first renews within the TTL: the second still cannot take it
    clock.advance(10_000);
    await a.check();
    await b.check();
    expect([a.active, b.active]).to.deep.equal([true, false]);

    // the first stops renewing (paused): past the expiry the second takes over and writes
    clock.advance(16_000);
    await b.check();
    expect(b.active).to.equal(true);
    expect((await api.post('/v1/vouchers', fixedVoucher('LEASE-2'))).status).to.equal(201);
    expect(await codesListed(api)).to.include('LEASE-2');
    const afterSecond = await reads.getCheckpoint(CORE_GROUP.checkpoint);
    expect(afterSecond).to.be.greaterThan(afterFirst);

    // the paused first holder wakes up with a batch made before the take-over: refused, nothing written
    const late = a.lease.fencedStore();
    const refused = await late
      .writeBatch({
        upserts: [{ collection: 'vouchers', doc: { id: 'LATE', code: 'LATE' } }],
        checkpoint: { name: CORE_GROUP.checkpoint, position: afterFirst },
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).to.be.instanceOf(FencedWriteError);
    expect(await reads.getCheckpoint(CORE_GROUP.checkpoint)).to.equal(afterSecond);
    expect(await reads.get('vouchers', 'LATE')).to.equal(null);
    // and its next check finds the lease taken: it stops its group
    await a.check();
    expect(a.active).to.equal(false);
  });
});

describe('two publisher instances sharing the server stores', function () {
  this.timeout(30_000);
  const started: TestService[] = [];
  let servers: Awaited<ReturnType<typeof fakeServers>>['servers'] | undefined;
  afterEach(async () => {
    sinon.restore();
    for (const service of started.splice(0).reverse()) await service.stop();
    await servers?.close();
    servers = undefined;
  });

  it('one holds the lease and records the deliveries; the other takes over once it stops renewing; the former holder’s publisher is refused', async () => {
    const clock = new FakeClock();
    ({ servers } = await fakeServers(clock));
    const webhooks = { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: [100], timeoutMs: 1_000 };
    const start = async (options: Parameters<typeof TestService.start>[0]) => {
      const service = await TestService.start({ clock, servers, webhooks, ...options });
      started.push(service);
      return service;
    };
    const leases = { ttlMs: 15_000, timers: false };
    const first = await start({ role: 'publisher', leases: { ...leases, holder: 'first' } });
    const second = await start({ role: 'publisher', leases: { ...leases, holder: 'second' } });
    await start({ role: 'projector' });
    const api = await start({ role: 'api' });
    const [a, b] = [first, second].map((s) => webhookRunnerOf(s.embedded.environments.sandbox)!);
    expect([a.active, b.active]).to.deep.equal([true, false]);

    const endpoint = await api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['voucher.created'] });
    expect(endpoint.status, JSON.stringify(endpoint.body)).to.equal(201);
    const deliveries = async () =>
      ((await api.get(`/v1/webhooks/${endpoint.body.id}/deliveries`)).body.data as unknown[]).length;
    expect((await api.post('/v1/vouchers', fixedVoucher('PUB-1'))).status).to.equal(201);
    await until(async () => (await deliveries()) === 1, 'the delivery recorded by the holder');

    // the first stops renewing (paused): past the expiry the second takes over
    clock.advance(16_000);
    await b.check();
    expect(b.active).to.equal(true);
    const writes = sinon.spy(MongoReadStore.prototype, 'writeBatch');
    expect((await api.post('/v1/vouchers', fixedVoucher('PUB-2'))).status).to.equal(201);
    await until(async () => (await deliveries()) === 2, 'the delivery recorded by the new holder');
    // the paused first holder's publisher still runs: its write of the same event is refused
    const refusedOf = async () =>
      (
        await Promise.all(
          writes.returnValues.map((p) =>
            p.then(
              () => undefined,
              (e: unknown) => e,
            ),
          ),
        )
      ).filter((e) => e instanceof FencedWriteError).length;
    await until(async () => (await refusedOf()) > 0, 'the former holder’s write refused');
    expect(await deliveries()).to.equal(2);
    // and its next check finds the lease taken: it stops its publisher
    await a.check();
    expect(a.active).to.equal(false);
  });
});

describe('ROLE without the server stores', () => {
  it('stops the start with one clear line: the embedded SQLite files are one process’s', async function () {
    this.timeout(60_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-role-'));
    try {
      const proc = run(['src/main.ts'], {
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        ROLE: 'projector',
      });
      const { code } = await exitWithin(proc, 45_000);
      const output = proc.output();
      expect(code, output).to.equal(1);
      expect(output.trim()).to.equal(
        'voucher service failed to start: ROLE=projector needs EVENTSTORE_URL and MONGODB_URL: the embedded SQLite files are one process’s (use ROLE=all without servers)'.replace(
          '’',
          "'",
        ),
      );
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
