/**
 * Upgrading a data dir whose core read models an older fold wrote (checkpoint `core`: usage counts
 * inside the voucher documents): on start they are removed and rebuilt from the event log.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import { CORE_CHECKPOINT, coreProjections } from '../../projections/index.ts';
import { environmentFiles } from '../../src/composition.ts';
import { collectionsOf } from '../../src/infrastructure/projector/projection.ts';
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
        expect((await first.post('/v1/vouchers/apply', { code: 'UPGRADE10', order_id: order, order: { value: 10_000 } })).status).to.equal(201);
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
      upserts: [{ collection: 'vouchers', doc: { ...doc!, usage_count: 7 } }, { collection: 'vouchers', doc: { id: 'v_GONE', code: 'GONE' } }],
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
