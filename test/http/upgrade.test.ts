/**
 * Upgrading a data dir whose core read models an older fold wrote (checkpoint `core`: usage counts
 * inside the voucher documents): on start they are removed and rebuilt from the event log. And one
 * whose analytics read models still live in read.db: they are removed from it and rebuilt in
 * analytics.db. And analytics.db is where the analytics group writes with PROJECTORS=inline too.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import { ANALYTICS_GROUP, CORE_CHECKPOINT, coreProjections } from '../../src/projections/index.ts';
import { environmentFiles } from '../../src/composition.ts';
import { collectionsOf } from '../../src/core/projection.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { TestService } from '../support/harness.ts';

/** The core group's checkpoint before usage counts got their own collection. */
const OLDER_CHECKPOINT = 'core';

describe('upgrade: core read models of an older fold', () => {
  it('are removed on start and rebuilt from the log: usage counts come back from the events', async () => {
    const first = await TestService.start();
    const dataDir = first.dataDir;
    let voucherId: string;
    let head: number;
    let expected: Record<string, unknown>;
    try {
      const voucher = await first.createVoucher({ code: 'UPGRADE10', type: 'percentage', value: 10 });
      voucherId = voucher.id;
      for (const order of ['u1', 'u2', 'u3']) {
        expect(
          (await first.post('/v1/vouchers/apply', { code: 'UPGRADE10', order_id: order, order: { value: 10_000 } }))
            .status,
        ).to.equal(201);
      }
      expected = (await first.get(`/v1/vouchers/${voucherId}`)).body;
      expect(expected.usage_count).to.equal(3);
      head = await first.sandbox.events.headPosition();
    } finally {
      await first.stop(true);
    }

    // What the older version left: its checkpoint, usage counts inside the voucher documents (wrong
    // here on purpose, as a stale fold could be), no usage collection.
    const reads = SqliteReadStore.open(environmentFiles(dataDir, 'sandbox').reads);
    const doc = await reads.get('vouchers', voucherId);
    await reads.reset(collectionsOf(coreProjections), CORE_CHECKPOINT);
    await reads.writeBatch({
      upserts: [
        { collection: 'vouchers', doc: { ...doc!, usage_count: 7 } },
        { collection: 'vouchers', doc: { id: 'v_GONE', code: 'GONE' } },
      ],
      checkpoint: { name: OLDER_CHECKPOINT, position: head },
    });
    await reads.close();

    const second = await TestService.start({ dataDir });
    try {
      expect(await second.sandbox.projector.waitFor(head, 30_000)).to.equal(true);
      expect((await second.get(`/v1/vouchers/${voucherId}`)).body).to.deep.equal(expected);
      expect((await second.get('/v1/vouchers/v_GONE')).status).to.equal(404);
      expect(await second.sandbox.reads.getCheckpoint(OLDER_CHECKPOINT)).to.equal(0);
      expect(await second.sandbox.reads.getCheckpoint(CORE_CHECKPOINT)).to.be.at.least(head);
    } finally {
      await second.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('upgrade: analytics read models in the core read store', () => {
  it('are removed from read.db on start and rebuilt from the log in analytics.db', async () => {
    const first = await TestService.start();
    const dataDir = first.dataDir;
    let path: string;
    let expected: Record<string, unknown>;
    let head: number;
    try {
      const voucher = await first.createVoucher({ code: 'MOVED10', type: 'percentage', value: 10 });
      for (const order of ['m1', 'm2']) {
        const res = await first.post('/v1/vouchers/apply', {
          code: 'MOVED10',
          order_id: order,
          customer: { id: 'c1' },
          order: { value: 10_000 },
        });
        expect(res.status).to.equal(201);
      }
      head = await first.sandbox.events.headPosition();
      expect(await first.sandbox.analytics.waitFor(head, 30_000)).to.equal(true);
      path = `/v1/analytics/vouchers/${voucher.id}/performance`;
      expected = (await first.get(path)).body;
      expect(expected.performance).to.include({ total_uses: 2, total_discount: 2_000 });
    } finally {
      await first.stop(true);
    }

    // What the older version left: the analytics documents and checkpoint in read.db (wrong here
    // on purpose, as stale ones could be), and no analytics.db.
    const files = environmentFiles(dataDir, 'sandbox');
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${files.analytics}${suffix}`, { force: true });
    const reads = SqliteReadStore.open(files.reads);
    await reads.writeBatch({
      upserts: [
        { collection: 'analytics_daily', doc: { id: 'stale', voucher_id: 'v_X', date: '2026-01-01', uses: 99 } },
      ],
      checkpoint: { name: ANALYTICS_GROUP.checkpoint, position: head },
    });
    await reads.close();

    const second = await TestService.start({ dataDir });
    try {
      expect(await second.sandbox.analytics.waitFor(head, 30_000)).to.equal(true);
      expect((await second.get(path)).body).to.deep.equal(expected);
      expect(await second.sandbox.reads.getCheckpoint(ANALYTICS_GROUP.checkpoint)).to.equal(0);
      expect(await second.sandbox.reads.count('analytics_daily')).to.equal(0);
      expect(await second.sandbox.analyticsReads.getCheckpoint(ANALYTICS_GROUP.checkpoint)).to.be.at.least(head);
    } finally {
      await second.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('analytics read models with PROJECTORS=inline', () => {
  it('are folded on the main thread into analytics.db, not read.db', async () => {
    const service = await TestService.start({ projectors: 'inline' });
    try {
      const voucher = await service.createVoucher({ code: 'INLINE10', type: 'percentage', value: 10 });
      const res = await service.post('/v1/vouchers/apply', {
        code: 'INLINE10',
        order_id: 'i1',
        customer: { id: 'c1' },
        order: { value: 10_000 },
      });
      expect(res.status).to.equal(201);
      expect(await service.sandbox.analytics.waitFor(await service.sandbox.events.headPosition(), 10_000)).to.equal(
        true,
      );
      const performance = await service.get(`/v1/analytics/vouchers/${voucher.id}/performance`);
      expect(performance.body.performance).to.include({ total_uses: 1, total_discount: 1_000 });
      expect(await service.sandbox.analyticsReads.count('analytics_daily')).to.equal(1);
      expect(await service.sandbox.reads.getCheckpoint(ANALYTICS_GROUP.checkpoint)).to.equal(0);
    } finally {
      await service.stop();
    }
  });
});
