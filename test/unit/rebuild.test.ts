import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { coreProjections, CORE_CHECKPOINT } from '../../src/projections/index.ts';
import type { VoucherCreated, VoucherEvent } from '../../src/domain/voucher/events.ts';
import {
  voucherApplicationRolledBack,
  voucherApplied,
  voucherCreated,
  voucherDeactivated,
} from '../fixtures/events.ts';
import { codeStream, voucherStream } from '../../src/domain/voucher/events.ts';
import type { EventStore, RecordedEvent } from '../../src/core/eventStore.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { rebuildReadModels } from '../../src/core/projectionGroups.ts';
import type { Document } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

const T0 = '2025-01-01T10:00:00Z';
const T1 = '2025-01-01T11:00:00Z';
const T2 = '2025-01-01T12:00:00Z';
const T3 = '2025-01-01T13:00:00Z';

const created = (voucherId: string, code: string, extra: Partial<VoucherCreated['data']> = {}): VoucherEvent =>
  voucherCreated({ voucherId, code, value: 10, currency: undefined, createdAt: T0, ...extra });

const applied = (
  voucherId: string,
  code: string,
  applicationId: string,
  orderId: string,
  customerId?: string,
): VoucherEvent =>
  voucherApplied({
    voucherId,
    applicationId,
    code,
    orderId,
    ...(customerId ? { customerId } : {}),
    discountAmount: 1_000,
    finalAmount: 9_000,
    currency: 'USD',
    orderFingerprint: `of-${orderId}`,
    appliedAt: T1,
  });

const rolledBack = (voucherId: string, applicationId: string, orderId: string): VoucherEvent =>
  voucherApplicationRolledBack({
    voucherId,
    applicationId,
    orderId,
    discountAmount: 1_000,
    finalAmount: 9_000,
    reason: 'order cancelled',
    appliedAt: T1,
    rolledBackAt: T2,
  });

interface Fixture {
  dir: string;
  events: SqliteEventStore;
  reads: SqliteReadStore;
  /** Position of each appended event, by a label. */
  at: Record<string, number>;
}

/** A temp SQLite event store with two vouchers' histories (and one event no projection handles). */
const openFixture = async (): Promise<Fixture> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rebuild-'));
  const events = SqliteEventStore.open(path.join(dir, 'events.db'));
  const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
  const at: Record<string, number> = {};
  const append = async (label: string, stream: string, event: { type: string; data: object }) => {
    at[label] = (
      await events.appendToStream(stream, [{ type: event.type, data: event.data as Record<string, unknown> }])
    ).position;
  };
  await append('claimA', codeStream('SAVE10'), {
    type: 'VoucherCodeClaimed',
    data: { code: 'SAVE10', voucherId: 'v_A', claimedAt: T0 },
  });
  await append('createA', voucherStream('v_A'), created('v_A', 'SAVE10'));
  await append(
    'createB',
    voucherStream('v_B'),
    created('v_B', 'Flat5', { voucherType: 'fixed', value: 500, currency: 'USD', conditions: { max_uses: 3 } }),
  );
  await append('apply1', voucherStream('v_A'), applied('v_A', 'SAVE10', 'va_1', 'order-1', 'cust-1'));
  await append('apply2', voucherStream('v_A'), applied('v_A', 'SAVE10', 'va_2', 'order-2'));
  await append('apply3', voucherStream('v_B'), applied('v_B', 'Flat5', 'va_3', 'order-3'));
  await append('rollback1', voucherStream('v_A'), rolledBack('v_A', 'va_1', 'order-1'));
  await append('deactivateB', voucherStream('v_B'), voucherDeactivated({ voucherId: 'v_B', deactivatedAt: T3 }));
  return { dir, events, reads, at };
};

const snapshot = async (reads: SqliteReadStore) => ({
  vouchers: await reads.find('vouchers', {}, { sort: [['id', 1]] }),
  usage: await reads.find('voucher_usage', {}, { sort: [['id', 1]] }),
  applications: await reads.find('applications', {}, { sort: [['id', 1]] }),
  checkpoint: await reads.getCheckpoint(CORE_CHECKPOINT),
});

describe('rebuildReadModels', () => {
  let fx: Fixture;

  beforeEach(async () => {
    fx = await openFixture();
  });
  afterEach(async () => {
    await fx.events.close();
    await fx.reads.close();
    fs.rmSync(fx.dir, { recursive: true, force: true });
  });

  it('builds the voucher and application documents from the whole log', async () => {
    const result = await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT);
    const head = await fx.events.headPosition();
    expect(result).to.deep.equal({ events: 8, position: head });
    expect(head).to.equal(fx.at.deactivateB);

    const { vouchers, usage, applications, checkpoint } = await snapshot(fx.reads);
    expect(checkpoint).to.equal(head);
    expect(vouchers).to.deep.equal([
      {
        id: 'v_A',
        code: 'SAVE10',
        code_lower: 'save10',
        type: 'percentage',
        value: 10,
        currency: null,
        config: null,
        conditions: {},
        status: 'active',
        valid_until: null,
        created_at: T0,
        updated_at: T0,
        deleted_at: null,
        created_seq: fx.at.createA,
        _position: fx.at.createA,
      },
      {
        id: 'v_B',
        code: 'Flat5',
        code_lower: 'flat5',
        type: 'fixed',
        value: 500,
        currency: 'USD',
        config: null,
        conditions: { max_uses: 3 },
        status: 'inactive',
        valid_until: null,
        created_at: T0,
        updated_at: T3,
        deleted_at: T3,
        created_seq: fx.at.createB,
        _position: fx.at.deactivateB,
      },
    ]);
    expect(usage).to.deep.equal([
      { id: 'v_A', usage_count: 1, applications_total: 2, _position: fx.at.rollback1 },
      { id: 'v_B', usage_count: 1, applications_total: 1, _position: fx.at.apply3 },
    ]);
    expect(applications).to.deep.equal([
      {
        id: 'va_1',
        voucher_id: 'v_A',
        code: 'SAVE10',
        order_id: 'order-1',
        customer_id: 'cust-1',
        order_value: 10_000,
        discount_amount: 1_000,
        final_amount: 9_000,
        currency: 'USD',
        status: 'rolled_back',
        applied_at: T1,
        applied_seq: fx.at.apply1,
        rolled_back_at: T2,
        rollback_reason: 'order cancelled',
        _position: fx.at.rollback1,
      },
      {
        id: 'va_2',
        voucher_id: 'v_A',
        code: 'SAVE10',
        order_id: 'order-2',
        customer_id: null,
        order_value: 10_000,
        discount_amount: 1_000,
        final_amount: 9_000,
        currency: 'USD',
        status: 'applied',
        applied_at: T1,
        applied_seq: fx.at.apply2,
        rolled_back_at: null,
        rollback_reason: null,
        _position: fx.at.apply2,
      },
      {
        id: 'va_3',
        voucher_id: 'v_B',
        code: 'Flat5',
        order_id: 'order-3',
        customer_id: null,
        order_value: 10_000,
        discount_amount: 1_000,
        final_amount: 9_000,
        currency: 'USD',
        status: 'applied',
        applied_at: T1,
        applied_seq: fx.at.apply3,
        rolled_back_at: null,
        rollback_reason: null,
        _position: fx.at.apply3,
      },
    ]);
  });

  it('removes stale documents of its collections and leaves other collections alone', async () => {
    await fx.reads.writeBatch({
      upserts: [
        { collection: 'vouchers', doc: { id: 'v_GHOST', code: 'GHOST' } },
        { collection: 'voucher_usage', doc: { id: 'v_GHOST', usage_count: 99 } },
        { collection: 'voucher_usage', doc: { id: 'v_A', usage_count: 42, _position: 1_000_000 } },
        { collection: 'applications', doc: { id: 'va_GHOST', voucher_id: 'v_GHOST' } },
        { collection: 'other_model', doc: { id: 'keep-me', n: 1 } },
      ],
      checkpoint: { name: CORE_CHECKPOINT, position: 1_000_000 },
    });
    await fx.reads.writeBatch({ checkpoint: { name: 'other', position: 7 } });

    await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT);

    const { vouchers, usage, applications, checkpoint } = await snapshot(fx.reads);
    expect(vouchers.map((v) => v.id)).to.deep.equal(['v_A', 'v_B']);
    expect(usage.map((u) => [u.id, u.usage_count])).to.deep.equal([
      ['v_A', 1],
      ['v_B', 1],
    ]);
    expect(applications.map((a) => a.id)).to.deep.equal(['va_1', 'va_2', 'va_3']);
    expect(checkpoint).to.equal(fx.at.deactivateB);
    expect(await fx.reads.get('other_model', 'keep-me')).to.deep.equal({ id: 'keep-me', n: 1 });
    expect(await fx.reads.getCheckpoint('other')).to.equal(7);
  });

  it('reports progress in positions, ending at the head position', async () => {
    const calls: Array<[number, number]> = [];
    await rebuildReadModels(
      fx.events,
      fx.reads,
      coreProjections,
      CORE_CHECKPOINT,
      (done, total) => calls.push([done, total]),
      3,
    );
    const head = fx.at.deactivateB;
    // 8 events in pages of 3: positions after each page are those of the 3rd, 6th and 8th event.
    expect(calls).to.deep.equal([
      [0, head],
      [fx.at.createB, head],
      [fx.at.apply3, head],
      [head, head],
    ]);
  });

  it('gives identical documents when run twice, and whatever the page size', async () => {
    const first = await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT);
    const once = await snapshot(fx.reads);
    const second = await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT);
    const twice = await snapshot(fx.reads);
    await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT, undefined, 1);
    const onePerPage = await snapshot(fx.reads);

    expect(second).to.deep.equal(first);
    expect(once.vouchers).to.have.length(2);
    expect(once.applications).to.have.length(3);
    expect(twice).to.deep.equal(once);
    expect(onePerPage).to.deep.equal(once);
  });

  it('reports done === total at 0 for an empty log and writes nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rebuild-empty-'));
    const events = SqliteEventStore.open(path.join(dir, 'events.db'));
    const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
    try {
      const calls: Array<[number, number]> = [];
      const result = await rebuildReadModels(events, reads, coreProjections, CORE_CHECKPOINT, (d, t) =>
        calls.push([d, t]),
      );
      expect(result).to.deep.equal({ events: 0, position: 0 });
      expect(calls).to.deep.equal([[0, 0]]);
      expect(await reads.count('vouchers')).to.equal(0);
      expect(await reads.getCheckpoint(CORE_CHECKPOINT)).to.equal(0);
    } finally {
      await events.close();
      await reads.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('works with non-contiguous positions (progress follows positions, not counts)', async () => {
    // The same log, renumbered 10, 25, 100, ...: an EventStore whose positions have gaps.
    const original = await fx.events.readAll();
    const positions = [10, 25, 100, 101, 250, 300, 999, 1_500];
    const renumbered: RecordedEvent[] = original.map((e, i) => ({ ...e, position: positions[i]! }));
    const gappy = {
      readAll: async ({ after = 0, maxCount = Infinity } = {}) =>
        renumbered.filter((e) => e.position > after).slice(0, maxCount),
      headPosition: async () => renumbered.at(-1)!.position,
    } as unknown as EventStore;

    const calls: Array<[number, number]> = [];
    const result = await rebuildReadModels(
      gappy,
      fx.reads,
      coreProjections,
      CORE_CHECKPOINT,
      (d, t) => calls.push([d, t]),
      4,
    );

    expect(result).to.deep.equal({ events: 8, position: 1_500 });
    expect(calls).to.deep.equal([
      [0, 1_500],
      [101, 1_500],
      [1_500, 1_500],
    ]);
    const { vouchers, usage, applications, checkpoint } = await snapshot(fx.reads);
    expect(checkpoint).to.equal(1_500);
    // createA is the 2nd event (25), createB the 3rd (100); apply3 the 6th (300), the rollback the 7th (999).
    expect(vouchers.map((v) => [v.id, v.created_seq, v._position])).to.deep.equal([
      ['v_A', 25, 25],
      ['v_B', 100, 1_500],
    ]);
    expect(usage.map((u) => [u.id, u._position, u.usage_count])).to.deep.equal([
      ['v_A', 999, 1],
      ['v_B', 300, 1],
    ]);
    expect(applications.map((a: Document) => [a.id, a.applied_seq, a.status])).to.deep.equal([
      ['va_1', 101, 'rolled_back'],
      ['va_2', 250, 'applied'],
      ['va_3', 300, 'applied'],
    ]);
  });

  it('looks up only documents written in an earlier page, and finds each of them', async () => {
    const lookups: Array<{ collection: string; ids: string[]; found: string[] }> = [];
    const getMany = fx.reads.getMany.bind(fx.reads);
    fx.reads.getMany = async <T extends Document>(collection: string, ids: string[]) => {
      const found = await getMany<T>(collection, ids);
      lookups.push({ collection, ids: [...ids].sort(), found: [...found.keys()].sort() });
      return found;
    };
    // pages of 2: [claimA, createA] [createB, apply1] [apply2, apply3] [rollback1, deactivateB]
    await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT, undefined, 2);

    for (const { collection, ids, found } of lookups) expect(found, `${collection} ${ids}`).to.deep.equal(ids);
    expect(lookups.map(({ collection, ids }) => `${collection} ${ids}`).sort()).to.deep.equal([
      'applications va_1', // rollback1: applied in the second page
      'voucher_usage v_A', // apply2: v_A's usage written by apply1 in the second page
      'voucher_usage v_A', // rollback1
      'vouchers v_B', // deactivateB: created in the second page
    ]);
    const rebuilt = await snapshot(fx.reads);
    await rebuildReadModels(fx.events, fx.reads, coreProjections, CORE_CHECKPOINT);
    expect(rebuilt).to.deep.equal(await snapshot(fx.reads));
  });

  it('a log ending with events no projection handles: every event counted, the checkpoint at the last', async () => {
    const { position: head } = await fx.events.appendToStream(codeStream('LATE'), [
      { type: 'VoucherCodeClaimed', data: { code: 'LATE', voucherId: 'v_L', claimedAt: T3 } },
    ]);
    for (const pageSize of [1, 3, 100]) {
      const calls: Array<[number, number]> = [];
      const result = await rebuildReadModels(
        fx.events,
        fx.reads,
        coreProjections,
        CORE_CHECKPOINT,
        (d, t) => calls.push([d, t]),
        pageSize,
      );
      expect(result, `pages of ${pageSize}`).to.deep.equal({ events: 9, position: head });
      expect(calls.at(-1)).to.deep.equal([head, head]);
      expect(await fx.reads.getCheckpoint(CORE_CHECKPOINT)).to.equal(head);
      expect(await fx.reads.count('applications')).to.equal(3);
    }
  });
});
