/**
 * `npm run replay` on the servers (scripts/replayServers.ts), in process on the in-memory
 * stand-ins of EventStoreDB and MongoDB (test/support/serverFakes.ts; a child process cannot
 * share them): the replay rebuilds, from each environment's stream namespace, the documents and
 * checkpoints the live projectors wrote in its database; and it refuses, naming the holder and
 * changing nothing, while a projector process holds one of the environment's leases.
 */
import { expect } from 'chai';
import type { Environment } from '../../src/application/context.ts';
import { ENVIRONMENTS } from '../../src/composition.ts';
import { Lease } from '../../src/core/lease.ts';
import { collectionsOf } from '../../src/core/projection.ts';
import type { Document, ReadStore } from '../../src/core/readStore.ts';
import { PROJECTION_GROUPS } from '../../src/projections/index.ts';
import { LeaseHeld, replayOnServers } from '../../scripts/replayServers.ts';
import { applyBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { settle } from '../support/analyticsFixture.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { PRODUCTION_KEY, TestService } from '../support/harness.ts';
import { fakeServers } from '../support/serverFakes.ts';

type Snapshot = Record<string, { collections: Record<string, Document[]>; checkpoint: number }>;

describe('npm run replay on EventStoreDB and MongoDB (in-memory stand-ins)', function () {
  this.timeout(30_000);
  const clock = new FakeClock();
  let servers: Awaited<ReturnType<typeof fakeServers>>['servers'];
  const live: Partial<Record<Environment, Snapshot>> = {};

  const stores = async (environment: Environment): Promise<Record<string, ReadStore>> => {
    const { core, analytics } = await servers.mongo!.environment(environment);
    return { core, analytics };
  };
  const snapshot = async (environment: Environment): Promise<Snapshot> => {
    const byGroup = await stores(environment);
    const out: Snapshot = {};
    for (const group of PROJECTION_GROUPS) {
      const reads = byGroup[group.name]!;
      const collections: Record<string, Document[]> = {};
      for (const c of collectionsOf(group.projections)) collections[c] = await reads.find(c, {}, { sort: [['id', 1]] });
      out[group.name] = { collections, checkpoint: await reads.getCheckpoint(group.checkpoint) };
    }
    return out;
  };
  /** A stale document in every collection of every group: a replay must remove it. */
  const spoil = async (environment: Environment) => {
    const byGroup = await stores(environment);
    for (const group of PROJECTION_GROUPS)
      await byGroup[group.name]!.writeBatch({
        upserts: collectionsOf(group.projections).map((collection) => ({ collection, doc: { id: 'stale' } })),
      });
  };

  before(async () => {
    ({ servers } = await fakeServers(clock));
    const service = await TestService.start({ clock, servers, projectors: 'inline' });
    try {
      for (const key of [undefined, PRODUCTION_KEY]) {
        for (let i = 0; i < 3; i += 1) {
          const code = `RPL${key ? 'P' : 'S'}${i}`;
          await service.createVoucher(fixedVoucher(code, { value: 200 + i }), key ? { key } : {});
          for (let j = 0; j < 3; j += 1) {
            const res = await service.post(
              '/v1/vouchers/apply',
              applyBody(code, `${code}-order-${j}`),
              key ? { key } : {},
            );
            expect(res.status, JSON.stringify(res.body)).to.equal(201);
          }
        }
      }
      await settle(service);
    } finally {
      await service.stop();
    }
    for (const environment of ENVIRONMENTS) live[environment] = await snapshot(environment);
  });
  after(async () => {
    await servers?.close();
  });

  it('refuses while a projector process holds a lease, naming it, and changes nothing', async () => {
    const held = new Lease({
      store: (await stores('production')).analytics!,
      name: 'analytics',
      holder: 'projector-a1',
      clock,
    });
    expect(await held.tick()).to.equal(true);
    await spoil('production');
    const spoiled = await snapshot('production');
    const failure = await replayOnServers({
      servers,
      dataDir: '/nonexistent',
      environments: ['production'],
      clock,
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(LeaseHeld);
    expect(String(failure)).to.include('production: the analytics projector lease is held by projector-a1');
    expect(await snapshot('production')).to.deep.equal(spoiled);
    // The core lease the replay took first is given back.
    expect(
      await new Lease({
        store: (await stores('production')).core!,
        name: 'core',
        holder: 'projector-b2',
        clock,
      }).tick(),
    ).to.equal(true);
    await held.release();
  });

  it('refuses while a service in the projector role runs, naming its process', async () => {
    const projector = await TestService.start({
      clock,
      servers,
      role: 'projector',
      leases: { holder: 'projector-host-7', timers: false },
    });
    try {
      const failure = await replayOnServers({
        servers,
        dataDir: '/nonexistent',
        environments: ['sandbox'],
        clock,
      }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(String(failure)).to.include('sandbox: the core projector lease is held by projector-host-7');
    } finally {
      await projector.stop();
    }
  });

  it('rebuilds each environment the documents and checkpoints the live projectors wrote', async () => {
    for (const environment of ENVIRONMENTS) {
      expect(live[environment]!.core!.collections.vouchers).to.have.length(3);
      expect(live[environment]!.core!.checkpoint).to.be.greaterThan(0);
      await spoil(environment);
    }
    const progress: string[] = [];
    const summaries = await replayOnServers({
      servers,
      dataDir: '/nonexistent',
      environments: ENVIRONMENTS,
      clock: new FakeClock(new Date(clock.now().getTime() + 60_000)), // after the leases taken above expire
      onProgress: (environment, group, done, total) => progress.push(`${environment} ${group} ${done}/${total}`),
    });
    for (const environment of ENVIRONMENTS) expect(await snapshot(environment)).to.deep.equal(live[environment]);
    expect(summaries.map((s) => s.environment)).to.deep.equal(ENVIRONMENTS);
    for (const s of summaries) {
      expect(s.events).to.be.greaterThan(0);
      expect(s.position).to.equal(live[s.environment]!.core!.checkpoint);
    }
    for (const environment of ENVIRONMENTS)
      for (const group of PROJECTION_GROUPS) {
        const head = live[environment]!.core!.checkpoint;
        expect(progress).to.include(`${environment} ${group.name} ${head}/${head}`);
      }
  });
});
