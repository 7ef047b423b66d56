import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { coreProjections, CORE_CHECKPOINT } from '../../src/projections/index.ts';
import { usageHistory, type ApplicationView } from '../../src/projections/usageHistory.ts';
import { voucherDetails, type VoucherDoc } from '../../src/projections/voucherDetails.ts';
import { voucherUsage, type VoucherUsage } from '../../src/projections/voucherUsage.ts';
import type { VoucherEvent } from '../../src/domain/voucher/events.ts';
import type { RecordedEvent } from '../../src/core/eventStore.ts';
import type { Document } from '../../src/core/readStore.ts';
import {
  recorded as recordedEvent,
  voucherApplicationRolledBack,
  voucherApplied,
  voucherCreated,
  voucherDeactivated,
  voucherExpired,
  voucherUpdated,
} from '../fixtures/events.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import type { Projection } from '../../src/core/projection.ts';
import { ProjectionRunner } from '../../src/core/projectionRunner.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

const V = 'v_1';
const FUTURE = '2026-03-01T00:00:00Z';

const created = voucherCreated({ code: 'Summer15', conditions: { max_uses: 10, valid_until: FUTURE } });
const updated = voucherUpdated({ value: 20, conditions: { max_uses: 20, valid_until: FUTURE } });
const applied = (applicationId: string, orderId: string, customerId?: string): VoucherEvent =>
  voucherApplied({
    applicationId,
    code: 'Summer15',
    orderId,
    customerId,
    discountAmount: 2_000,
    finalAmount: 8_000,
    appliedAt: `2026-01-03T00:00:0${applicationId.slice(-1)}Z`,
  });
const rolledBack = voucherApplicationRolledBack({
  applicationId: 'va_1',
  orderId: 'ord_1',
  customerId: 'cus_1',
  discountAmount: 2_000,
  finalAmount: 8_000,
  reason: 'returned',
  appliedAt: '2026-01-03T00:00:01Z',
  rolledBackAt: '2026-01-04T00:00:00Z',
});
const deactivated = voucherDeactivated({ deactivatedAt: '2026-01-05T00:00:00Z' });
const expired = voucherExpired({ validUntil: FUTURE, expiredAt: '2026-03-01T00:00:30Z' });

/** created, updated, applied va_1 (cus_1), applied va_2 (no customer), rolled back va_1, deactivated */
const HISTORY = [
  created,
  updated,
  applied('va_1', 'ord_1', 'cus_1'),
  applied('va_2', 'ord_2'),
  rolledBack,
  deactivated,
];

/** At positions 10, 20, …, revisions 0, 1, … of the voucher's stream. */
const recorded = (events: VoucherEvent[]): RecordedEvent[] =>
  events.map((event, i) =>
    recordedEvent(event, (i + 1) * 10, { id: `e${i + 1}`, revision: i, recordedAt: '2026-01-01T00:00:00.000Z' }),
  );

/** Folds the events a projection handles into the document with `id`. */
const foldDoc = <D extends { id: string }>(projection: Projection, events: RecordedEvent[], id: string) =>
  events
    .filter((e) => projection.handles.includes(e.type) && projection.documentId(e) === id)
    .reduce<Document | null>((view, e) => projection.evolve(view, e), null) as (D & Record<string, unknown>) | null;

const detailsAfterHistory: VoucherDoc = {
  id: V,
  code: 'Summer15',
  code_lower: 'summer15',
  type: 'percentage',
  value: 20,
  currency: 'EUR',
  config: null,
  conditions: { max_uses: 20, valid_until: FUTURE },
  status: 'inactive',
  valid_until: FUTURE,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-05T00:00:00Z',
  deleted_at: '2026-01-05T00:00:00Z',
  created_seq: 10,
};

describe('projections: pure evolve', () => {
  it('voucher_details folds the whole history into the voucher document', () => {
    expect(foldDoc(voucherDetails, recorded(HISTORY), V)).to.deep.equal(detailsAfterHistory);
  });

  it('voucher_usage counts applications less rollbacks, never below 0, apart from the voucher document', () => {
    expect(foldDoc(voucherUsage, recorded(HISTORY), V)).to.deep.equal({ id: V, usage_count: 1, applications_total: 2 });
    expect(foldDoc(voucherUsage, recorded([created, rolledBack]), V)).to.deep.equal({ id: V, usage_count: 0 });
    expect(voucherDetails.handles).to.not.include('VoucherApplied'); // an apply leaves the indexed document alone
  });

  it('voucher_usage totals the applications ever recorded; a document without the total (an earlier build) goes on without', () => {
    const [, , first, second, rollback] = recorded(HISTORY);
    const fold = (from: VoucherUsage | null, events: RecordedEvent[]) =>
      events.reduce<Document | null>((view, e) => voucherUsage.evolve(view as VoucherUsage | null, e as never), from);
    expect(fold(null, [first!, second!, rollback!])).to.deep.equal({ id: V, usage_count: 1, applications_total: 2 });
    expect(fold({ id: V, usage_count: 4 }, [first!, rollback!, second!])).to.deep.equal({ id: V, usage_count: 5 });
    expect(fold({ id: V, usage_count: 4, applications_total: 7 }, [rollback!])).to.deep.equal({
      id: V,
      usage_count: 3,
      applications_total: 7,
    });
  });

  it('voucher_details: an update to active clears deleted_at; currency null clears, absent keeps; expiry sets the status', () => {
    const reactivated = voucherUpdated({ currency: null, updatedAt: '2026-01-06T00:00:00Z' });
    const doc = foldDoc(voucherDetails, recorded([...HISTORY, reactivated]), V)!;
    expect(doc).to.deep.include({
      status: 'active',
      deleted_at: null,
      currency: null,
      value: 20,
      updated_at: '2026-01-06T00:00:00Z',
    });
    const kept = foldDoc(voucherDetails, recorded([created, updated]), V)!;
    expect(kept.currency).to.equal('EUR');
    expect(foldDoc(voucherDetails, recorded([created, expired]), V)).to.deep.include({ status: 'expired' });
  });

  it('voucher_details ignores events for a voucher it has not seen created', () => {
    expect(foldDoc(voucherDetails, recorded([applied('va_1', 'ord_1'), deactivated]), V)).to.equal(null);
  });

  it('usage_history folds applications and their rollback', () => {
    const events = recorded(HISTORY);
    const expected: Record<string, ApplicationView> = {
      va_1: {
        id: 'va_1',
        voucher_id: V,
        code: 'Summer15',
        order_id: 'ord_1',
        customer_id: 'cus_1',
        order_value: 10_000,
        discount_amount: 2_000,
        final_amount: 8_000,
        currency: 'EUR',
        status: 'rolled_back',
        applied_at: '2026-01-03T00:00:01Z',
        applied_seq: 30,
        rolled_back_at: '2026-01-04T00:00:00Z',
        rollback_reason: 'returned',
      },
      va_2: {
        id: 'va_2',
        voucher_id: V,
        code: 'Summer15',
        order_id: 'ord_2',
        customer_id: null,
        order_value: 10_000,
        discount_amount: 2_000,
        final_amount: 8_000,
        currency: 'EUR',
        status: 'applied',
        applied_at: '2026-01-03T00:00:02Z',
        applied_seq: 40,
        rolled_back_at: null,
        rollback_reason: null,
      },
    };
    expect(foldDoc(usageHistory, events, 'va_1')).to.deep.equal(expected.va_1);
    expect(foldDoc(usageHistory, events, 'va_2')).to.deep.equal(expected.va_2);
    expect(
      events
        .filter((e) => (usageHistory as Projection).handles.includes(e.type))
        .map((e) => (usageHistory as Projection).documentId(e)),
    ).to.deep.equal(['va_1', 'va_2', 'va_1']);
  });
});

describe('projections: ProjectionRunner over SQLite stores', () => {
  let dir: string;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let runner: ProjectionRunner;
  let batch: RecordedEvent[];

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'projections-'));
    events = SqliteEventStore.open(path.join(dir, 'events.db'), { pollIntervalMs: 20 });
    reads = SqliteReadStore.open(path.join(dir, 'reads.db'));
    await events.appendToStream('voucher-other', [{ type: 'Unrelated', data: { voucherId: 'v_other' } }]);
    await events.appendToStream(
      `voucher-${V}`,
      HISTORY.map((e) => ({ type: e.type, data: e.data as unknown as Record<string, unknown> })),
    );
    batch = await events.readAll();
    runner = new ProjectionRunner(events, reads, coreProjections, CORE_CHECKPOINT);
  });

  afterEach(async () => {
    await runner.stop();
    await events.close();
    await reads.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const documents = async () => ({
    voucher: await reads.get('vouchers', V),
    usage: await reads.get('voucher_usage', V),
    applications: await reads.find('applications', {}, { sort: [['applied_seq', 1]] }),
  });

  it('writes the documents with their last position; a batch handled again leaves them equal', async () => {
    expect(batch.map((e) => e.position)).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
    const [head, tail] = [batch.slice(0, 3), batch.slice(3)]; // tail: applications, rollback, deactivation
    await runner.handle(head);
    await runner.handle(tail);
    const first = await documents();
    expect(first.voucher).to.deep.equal({ ...detailsAfterHistory, created_seq: 2, _position: 7 });
    expect(first.usage).to.deep.equal({ id: V, usage_count: 1, applications_total: 2, _position: 6 });
    expect(first.applications.map((a) => [a.id, a.status, a.applied_seq, a._position])).to.deep.equal([
      ['va_1', 'rolled_back', 4, 6],
      ['va_2', 'applied', 5, 5],
    ]);
    await runner.handle(tail);
    expect(await documents()).to.deep.equal(first);
    await runner.handle(batch);
    await runner.handle(batch);
    expect(await documents()).to.deep.equal(first);
    expect(await reads.getCheckpoint(CORE_CHECKPOINT)).to.equal(7);
  });

  it('a redelivered overlap is skipped per document while the new events are applied', async () => {
    await runner.handle(batch.slice(0, 4)); // ..., applied va_1
    expect((await reads.get<VoucherUsage>('voucher_usage', V))!.usage_count).to.equal(1);
    await runner.handle(batch.slice(3, 6)); // applied va_1 again, applied va_2, rolled back va_1
    const usage = (await reads.get<VoucherUsage>('voucher_usage', V))!;
    expect(usage.usage_count).to.equal(1);
    expect(usage._position).to.equal(6);
    expect((await reads.get<ApplicationView>('applications', 'va_1'))!.status).to.equal('rolled_back');
  });

  it('advances the checkpoint with each batch, in memory and in the read store', async () => {
    expect(runner.checkpoint).to.equal(0);
    await runner.handle(batch.slice(0, 3));
    expect(runner.checkpoint).to.equal(3);
    expect(await reads.getCheckpoint(CORE_CHECKPOINT)).to.equal(3);
    await runner.handle(batch.slice(3));
    expect(runner.checkpoint).to.equal(7);
    expect(await reads.getCheckpoint(CORE_CHECKPOINT)).to.equal(7);
    await runner.handle([]);
    expect(runner.checkpoint).to.equal(7);
  });

  it('waitFor resolves true once the position is projected, false after its timeout when not', async () => {
    const waiting = runner.waitFor(5);
    let settled: boolean | undefined;
    void waiting.then((ok) => {
      settled = ok;
    });
    await runner.handle(batch.slice(0, 4));
    await Promise.resolve();
    expect(settled).to.equal(undefined); // position 4 < 5: still waiting
    await runner.handle(batch.slice(4));
    expect(await waiting).to.equal(true);
    expect(await runner.waitFor(7)).to.equal(true);
    expect(await runner.waitFor(8, 30)).to.equal(false);
  });

  it('a started runner resumes after the stored checkpoint, then follows live appends; stop() releases waiters with false', async () => {
    await reads.writeBatch({ checkpoint: { name: CORE_CHECKPOINT, position: 2 } }); // as if VoucherCreated was projected
    await runner.start();
    expect(await runner.waitFor(7, 10_000)).to.equal(true);
    expect(await reads.get('vouchers', V)).to.equal(null); // VoucherCreated (position 2) was not replayed
    expect((await reads.get<ApplicationView>('applications', 'va_1'))!.status).to.equal('rolled_back');
    const appended = await events.appendToStream(
      `voucher-${V}`,
      [applied('va_3', 'ord_3')].map((e) => ({ type: e.type, data: e.data as unknown as Record<string, unknown> })),
    );
    expect(await runner.waitFor(appended.position, 10_000)).to.equal(true);
    expect(await reads.get<ApplicationView>('applications', 'va_3')).to.deep.include({
      status: 'applied',
      applied_seq: 8,
      _position: 8,
    });
    expect(runner.checkpoint).to.equal(8);
    const pending = runner.waitFor(appended.position + 100, 10_000);
    await runner.stop();
    expect(await pending).to.equal(false);
  });
});
