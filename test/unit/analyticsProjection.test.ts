/**
 * The analytics projection group: a rebuild from scratch gives the documents the live projector
 * kept; events delivered twice change nothing; the fold itself (attempt dedupe, rollbacks).
 */
import type { DocumentSetProjection } from '../../src/core/projection.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { analyticsProjections, ANALYTICS_CHECKPOINT } from '../../src/projections/index.ts';
import { analytics } from '../../src/projections/analytics.ts';
import type { DailyDoc } from '../../src/projections/analyticsDocs.ts';
import { environmentFiles } from '../../src/composition.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { collectionsOf } from '../../src/core/projection.ts';
import { ProjectionRunner } from '../../src/core/projectionRunner.ts';
import { rebuildReadModels } from '../../src/core/projectionGroups.ts';
import type { ReadStore } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { buildFixture } from '../support/analyticsFixture.ts';
import { TestService } from '../support/harness.ts';
import type { RecordedEvent } from '../../src/core/eventStore.ts';
import { orderAttemptsRecorded, recorded, voucherApplicationRolledBack, voucherApplied } from '../fixtures/events.ts';

const snapshot = async (reads: ReadStore) => {
  const out: Record<string, unknown[]> = {};
  for (const c of collectionsOf(analyticsProjections)) out[c] = await reads.find(c, {}, { sort: [['id', 1]] });
  return out;
};

describe('analytics projections', function () {
  this.timeout(60_000);
  let dataDir: string;
  let live: Record<string, unknown[]>;
  let events: SqliteEventStore;

  before(async () => {
    const service = await TestService.start();
    await buildFixture(service);
    // and an export, so the exports read model is part of the comparison
    await service.post('/v1/analytics/export', {
      voucher_ids: [(await service.get('/v1/vouchers?limit=1')).body.data[0].id],
      metrics: ['uses'],
    });
    await service.stop(true);
    dataDir = service.dataDir;
    const reads = SqliteReadStore.open(environmentFiles(dataDir, 'sandbox').analytics);
    live = await snapshot(reads);
    await reads.close();
    events = SqliteEventStore.open(environmentFiles(dataDir, 'sandbox').events);
  });
  after(async () => {
    await events.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('the live documents are those of the fixture (8 daily docs of P, 1 of Q; 4 customers; 7 validated order ids)', () => {
    expect((live.analytics_daily as DailyDoc[]).map((d) => d.date)).to.have.members([
      '2026-02-20',
      '2026-03-01',
      '2026-03-02',
      '2026-03-03',
      '2026-03-05',
      '2026-03-06',
      '2026-03-07',
      '2026-03-08',
      '2026-03-09',
    ]);
    expect(live.analytics_customers).to.have.length(4);
    expect(live.analytics_voucher_customers).to.have.length(5); // c1..c4 with P, c3 with Q
    expect(live.analytics_order_attempts).to.have.length(7); // the validated order ids: o1, o2, o3, o4, o6, o7, o8
    expect(live.exports).to.have.length(1);
  });

  it('a rebuild from scratch (npm run replay) gives identical documents', async () => {
    const reads = SqliteReadStore.open(environmentFiles(dataDir, 'sandbox').analytics);
    try {
      await rebuildReadModels(events, reads, analyticsProjections, ANALYTICS_CHECKPOINT, undefined, 7);
      expect(await snapshot(reads)).to.deep.equal(live);
      expect(await reads.getCheckpoint(ANALYTICS_CHECKPOINT)).to.equal(await events.headPosition());
    } finally {
      await reads.close();
    }
  });

  it('events delivered twice (one by one, and whole batches again) change nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'analytics-twice-'));
    const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
    try {
      const runner = new ProjectionRunner(events, reads, analyticsProjections, ANALYTICS_CHECKPOINT);
      const all = await events.readAll();
      await runner.handle(all);
      const once = await snapshot(reads);
      expect(once).to.deep.equal(live);
      for (const event of all) await runner.handle([event]);
      await runner.handle(all.slice(3, 20));
      await runner.handle([...all.slice(10, 12), ...all.slice(10, 12)]);
      expect(await snapshot(reads)).to.deep.equal(once);
    } finally {
      await reads.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('fold', () => {
    const at = (event: { type: string; data: object }, position: number) =>
      recorded(event, position, { streamId: 's', revision: 0 });
    // The test builds events as plain records: the projection as a group holds it (any event type).
    const analyticsUntyped: DocumentSetProjection = analytics;
    // c1's application va_1 on order o1 on Jan 1 (1,000 off 10,000), and its rollback
    const va1 = {
      voucherId: 'v_A',
      applicationId: 'va_1',
      orderId: 'o1',
      customerId: 'c1',
      discountAmount: 1_000,
      finalAmount: 9_000,
      appliedAt: '2026-01-01T23:00:00Z',
    };
    const va1Back = voucherApplicationRolledBack({ ...va1, rolledBackAt: '2026-01-02T01:00:00Z' });
    /** Folds `list` into `docs` (a new map by default) as the runner would, one event at a time. */
    const fold = (list: RecordedEvent[], docs = new Map<string, any>()) => {
      for (const e of list) {
        const view = new Map(
          analyticsUntyped
            .touches(e)
            .map((r) => [`${r.collection}/${r.id}`, docs.get(`${r.collection}/${r.id}`) ?? null]),
        );
        for (const r of analyticsUntyped.follows?.(e, view) ?? [])
          view.set(`${r.collection}/${r.id}`, docs.get(`${r.collection}/${r.id}`) ?? null);
        for (const [k, v] of analyticsUntyped.evolve(view, e)) docs.set(k, v);
      }
      return docs;
    };

    it('a day the runner owns is changed in place; without owned, evolve leaves every document it is given as it was', () => {
      const application = (n: number, customerId: string) =>
        at(
          voucherApplied({
            voucherId: 'v_A',
            applicationId: `va_${n}`,
            code: 'A',
            orderId: `o${n}`,
            customerId,
            customerSegment: 'vip',
            discountAmount: 1_000,
            finalAmount: 9_000,
            orderValue: 10_000,
            appliedAt: `2026-01-0${n}T10:00:00Z`,
          }),
          n,
        );
      // c1 on Jan 1 and 3, then c1 on Jan 2: the gaps of Jan 3 (another day's document) change too
      const docs = fold([application(1, 'c1'), application(3, 'c1')]);
      const second = application(2, 'c1');
      const view = new Map(
        [...analyticsUntyped.touches(second), ...analyticsUntyped.follows!(second, docs)].map((r) => {
          const key = `${r.collection}/${r.id}`;
          return [key, docs.get(key) ?? null];
        }),
      );
      for (const r of analyticsUntyped.follows!(second, view)) {
        const key = `${r.collection}/${r.id}`;
        view.set(key, docs.get(key) ?? null);
      }
      const day3 = 'analytics_daily/v_A|2026-01-03';
      expect(view.get(day3)).to.not.equal(null);
      const before = new Map([...view].map(([k, v]) => [k, JSON.stringify(v)]));
      const copied = analyticsUntyped.evolve(view, second);
      // given nothing owned: new documents, and the ones given unchanged
      expect(copied.get(day3)).to.not.equal(view.get(day3));
      for (const [k, v] of view) expect(JSON.stringify(v), k).to.equal(before.get(k));
      // given the days as owned: the same figures, in the days themselves
      const days = [...view].filter(([k, v]) => k.startsWith('analytics_daily/') && v !== null).map(([, v]) => v!);
      const inPlace = analyticsUntyped.evolve(view, second, new Set(days));
      expect(inPlace.get(day3)).to.equal(view.get(day3));
      expect([...inPlace.keys()]).to.have.members([...copied.keys()]);
      for (const [k, v] of inPlace) expect(JSON.stringify(v), k).to.equal(JSON.stringify(copied.get(k)));
      // and nothing else it was given changed
      for (const [k, v] of view)
        if (!k.startsWith('analytics_daily/')) expect(JSON.stringify(v), k).to.equal(before.get(k));
    });

    it('touches names only documents the fold reads or writes (each is loaded for every event)', () => {
      const log = [
        at(voucherApplied({ voucherId: 'v_A', applicationId: 'va_1', code: 'A', orderId: 'o1', customerId: 'c1' }), 1),
        at(voucherApplied({ voucherId: 'v_A', applicationId: 'va_2', code: 'A', orderId: 'o2' }), 2),
        at(
          voucherApplicationRolledBack({ voucherId: 'v_A', applicationId: 'va_1', orderId: 'o1', customerId: 'c1' }),
          3,
        ),
        at(
          orderAttemptsRecorded({
            attempts: [
              { voucherId: 'v_A', orderId: 'o3', at: '2026-01-01T00:00:00Z' },
              { voucherId: 'v_A', at: '2026-01-01T00:00:00Z' },
            ],
          }),
          4,
        ),
      ];
      const docs = new Map<string, any>();
      for (const e of log) {
        const read = new Set<string>();
        // the view as the runner builds it, noting what the fold looks up
        class Tracked extends Map<string, any> {
          override get(key: string) {
            read.add(key);
            return super.get(key);
          }
        }
        const view = new Tracked(
          analyticsUntyped
            .touches(e)
            .map((r) => [`${r.collection}/${r.id}`, docs.get(`${r.collection}/${r.id}`) ?? null]),
        );
        const changes = analyticsUntyped.evolve(view, e);
        const unused = analyticsUntyped
          .touches(e)
          .map((r) => `${r.collection}/${r.id}`)
          .filter((key) => !read.has(key) && !changes.has(key));
        expect(unused, e.type).to.deep.equal([]);
        for (const [k, v] of changes) docs.set(k, v);
      }
    });

    it('attempts: one per distinct order id (also within one event), one per call without an id', () => {
      const docs = fold([
        at(
          orderAttemptsRecorded({
            recordedAt: '2026-01-01T00:00:01Z',
            attempts: [
              { voucherId: 'v_A', orderId: 'o1', at: '2026-01-01T00:00:00Z' },
              { voucherId: 'v_A', orderId: 'o1', at: '2026-01-01T00:00:00Z' },
              { voucherId: 'v_A', at: '2026-01-01T00:00:00Z' },
              { voucherId: 'v_A', at: '2026-01-01T00:00:00Z', segment: 'vip' },
              { voucherId: 'v_B', orderId: 'o1', at: '2026-01-01T23:59:59Z' },
            ],
          }),
          1,
        ),
      ]);
      expect(docs.get('analytics_daily/v_A|2026-01-01')).to.deep.include({
        orders: 3,
        uses: 0,
        segments: {
          unknown: { uses: 0, discount: 0, order_value: 0, final_amount: 0, orders: 2 },
          vip: { uses: 0, discount: 0, order_value: 0, final_amount: 0, orders: 1 },
        },
      });
      expect(docs.get('analytics_daily/v_B|2026-01-01')).to.deep.include({ orders: 1 });
    });

    it('a rollback subtracts on the day of the application; a second rollback of it changes nothing', () => {
      const applied = voucherApplied({
        voucherId: 'v_A',
        applicationId: 'va_1',
        code: 'A',
        orderId: 'o1',
        customerId: 'c1',
        discountAmount: 1_000,
        finalAmount: 9_000,
        orderFingerprint: 'x',
        customerFingerprint: 'y',
        appliedAt: '2026-01-01T23:00:00Z',
      });
      const docs = fold([at(applied, 1), at(va1Back, 2), at(va1Back, 3)]);
      // an application is a use, not an order attempt: nothing is left once it is rolled back
      expect(docs.get('analytics_daily/v_A|2026-01-01')).to.deep.include({
        uses: 0,
        discount: 0,
        final_amount: 0,
        order_value: 0,
        orders: 0,
        unique_customers: 0,
        currency: 'EUR',
      });
      expect(docs.get('analytics_voucher_customers/v_A|c1')).to.deep.include({
        uses: 0,
        days: {},
        first_day: null,
        last_day: null,
        first_used_at: '2026-01-01T23:00:00Z',
      });
      expect(docs.get('analytics_customers/c1')).to.deep.include({
        uses: 0,
        spend: 0,
        first_applied_at: '2026-01-01T23:00:00Z',
      });
      expect(docs.has('analytics_daily/v_A|2026-01-02')).to.equal(false);
      // the order's live applications are what a rollback reads: no document per application
      expect([...docs.keys()].filter((k) => k.startsWith('analytics_applications/'))).to.deep.equal([]);
      expect(docs.get('analytics_orders/o1')).to.equal(null);
    });

    it('an application an earlier build folded into a document of its own (its order lists it not) is rolled back once from it', () => {
      const folded = fold([at(voucherApplied({ ...va1, customerSegment: 'vip' }), 1)]);
      // as an earlier build left it: the application's own document, and no order document
      folded.delete('analytics_orders/o1');
      const kept = {
        id: 'va_1',
        voucher_id: 'v_A',
        customer_id: 'c1',
        day: '2026-01-01',
        segment: 'vip',
        rolled_back: false,
      };
      folded.set('analytics_applications/va_1', kept);
      fold([at(va1Back, 2)], folded);
      expect(folded.get('analytics_applications/va_1')).to.deep.equal({ ...kept, rolled_back: true });
      const day = folded.get('analytics_daily/v_A|2026-01-01');
      expect(day).to.deep.include({ uses: 0, discount: 0, final_amount: 0, order_value: 0, unique_customers: 0 });
      expect(day.segments.vip).to.deep.include({ uses: 0, final_amount: 0 });
      expect(folded.get('analytics_customers/c1')).to.deep.include({ uses: 0, spend: 0 });
      // a second rollback of it (another event) finds it rolled back
      const after = JSON.stringify([...folded]);
      fold([at(va1Back, 3)], folded);
      expect(JSON.stringify([...folded])).to.equal(after);
    });

    it("an order with two vouchers: what the customer paid is counted once, shared by discount; a rollback moves the other's share", () => {
      // 10,000 with A (1,000 off, day 1) then B (450 off, day 2): the customer paid 8,550
      const a = voucherApplied({
        voucherId: 'v_A',
        applicationId: 'va_a',
        orderId: 'o1',
        customerId: 'c1',
        customerSegment: 'vip',
        orderValue: 10_000,
        discountAmount: 1_000,
        finalAmount: 9_000,
        appliedAt: '2026-01-01T10:00:00Z',
      });
      const b = voucherApplied({
        voucherId: 'v_B',
        applicationId: 'va_b',
        orderId: 'o1',
        customerId: 'c1',
        orderValue: 10_000,
        discountAmount: 450,
        finalAmount: 8_550,
        appliedAt: '2026-01-02T10:00:00Z',
      });
      const both = fold([at(a, 1), at(b, 2)]);
      // 8,550 × 1,000/1,450 = 5,896.55 and 8,550 × 450/1,450 = 2,653.45: largest remainder
      expect(both.get('analytics_daily/v_A|2026-01-01')).to.deep.include({ uses: 1, final_amount: 5_897 });
      expect(both.get('analytics_daily/v_A|2026-01-01').segments.vip.final_amount).to.equal(5_897);
      expect(both.get('analytics_daily/v_B|2026-01-02')).to.deep.include({ uses: 1, final_amount: 2_653 });
      expect(both.get('analytics_voucher_customers/v_A|c1')).to.deep.include({ spend: 5_897 });
      expect(both.get('analytics_voucher_customers/v_A|c1').days['2026-01-01']).to.deep.equal([1, 5_897, 10_000]);
      expect(both.get('analytics_voucher_customers/v_B|c1')).to.deep.include({ spend: 2_653 });
      expect(both.get('analytics_customers/c1')).to.deep.include({ uses: 2, spend: 8_550 });
      expect(both.get('analytics_orders/o1').live.map((x: any) => [x.application_id, x.share])).to.deep.equal([
        ['va_a', 5_897],
        ['va_b', 2_653],
      ]);

      const backA = voucherApplicationRolledBack({
        voucherId: 'v_A',
        applicationId: 'va_a',
        orderId: 'o1',
        customerId: 'c1',
        orderValue: 10_000,
        discountAmount: 1_000,
        finalAmount: 9_000,
        appliedAt: '2026-01-01T10:00:00Z',
        rolledBackAt: '2026-01-03T10:00:00Z',
      });
      const afterA = fold([at(a, 1), at(b, 2), at(backA, 3)]);
      // B alone: the customer pays 10,000 − 450
      expect(afterA.get('analytics_daily/v_A|2026-01-01')).to.deep.include({ uses: 0, final_amount: 0 });
      expect(afterA.get('analytics_daily/v_A|2026-01-01').segments.vip.final_amount).to.equal(0);
      expect(afterA.get('analytics_daily/v_B|2026-01-02')).to.deep.include({ uses: 1, final_amount: 9_550 });
      expect(afterA.get('analytics_voucher_customers/v_B|c1').days['2026-01-02']).to.deep.equal([1, 9_550, 10_000]);
      expect(afterA.get('analytics_customers/c1')).to.deep.include({ uses: 1, spend: 9_550 });

      const backB = voucherApplicationRolledBack({
        voucherId: 'v_B',
        applicationId: 'va_b',
        orderId: 'o1',
        customerId: 'c1',
        orderValue: 10_000,
        discountAmount: 450,
        finalAmount: 8_550,
        appliedAt: '2026-01-02T10:00:00Z',
        rolledBackAt: '2026-01-03T11:00:00Z',
      });
      const none = fold([at(a, 1), at(b, 2), at(backA, 3), at(backB, 4)]);
      expect(none.get('analytics_customers/c1')).to.deep.include({ uses: 0, spend: 0 });
      expect(none.get('analytics_daily/v_B|2026-01-02')).to.deep.include({ uses: 0, final_amount: 0 });
      expect(none.get('analytics_orders/o1')).to.equal(null); // no live application: removed
    });
  });
});
