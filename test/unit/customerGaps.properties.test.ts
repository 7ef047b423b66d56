/**
 * Unique customers and repeat usage from the daily gap histograms (projections/customerGaps.ts)
 * equal a brute-force count over the live applications, for every window of 1 to 90 days:
 * first on the pure functions, then through the analytics projection and the ProjectionRunner
 * (applications out of day order, rollbacks, events in batches of any size, delivered twice).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { analyticsProjections } from '../../src/projections/index.ts';
import { COLLECTIONS, type DailyDoc, type DayEntry } from '../../src/projections/analyticsDocs.ts';
import {
  applyGapChanges,
  countCustomers,
  dayNumber,
  gapChanges,
  neighbours,
  type GapHistogram,
} from '../../src/projections/customerGaps.ts';
import type { EventStore, RecordedEvent } from '../../src/core/eventStore.ts';
import { ProjectionRunner } from '../../src/core/projectionRunner.ts';
import { recorded, voucherApplicationRolledBack, voucherApplied } from '../fixtures/events.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

const BASE = dayNumber('2026-01-01');
const dayAt = (n: number): string => new Date((BASE + n) * 86_400_000).toISOString().slice(0, 10);

/** A live use: customer and day number (from BASE). */
interface Use {
  customer: string;
  day: number;
}

/** The truth: customers with ≥ 1 and ≥ 2 live uses in [from, to]. */
const bruteForce = (uses: Use[], from: number, to: number) => {
  const counts = new Map<string, number>();
  for (const u of uses) if (u.day >= from && u.day <= to) counts.set(u.customer, (counts.get(u.customer) ?? 0) + 1);
  return { unique: counts.size, repeat: [...counts.values()].filter((n) => n >= 2).length };
};

/** Every window of 1..90 days starting in [first − 3, last] (a few start before any use). */
const windows = (span: number): Array<[number, number]> => {
  const out: Array<[number, number]> = [];
  for (let from = -3; from <= span; from += 1)
    for (const len of [1, 2, 3, 7, 30, 31, 89, 90]) out.push([from, from + len - 1]);
  return out;
};

const countFrom = (histograms: Map<number, GapHistogram>, from: number, to: number) => {
  const docs: Array<{ date: string; gaps: GapHistogram }> = [];
  for (const [day, gaps] of histograms) if (day >= from && day <= to) docs.push({ date: dayAt(day), gaps });
  return countCustomers(docs, dayAt(from));
};

/** Operations: add a use (customer index, day), or remove the live use at some index. */
const operations = fc.array(
  fc.oneof(
    fc.record({
      add: fc.constant(true as const),
      customer: fc.integer({ min: 0, max: 4 }),
      day: fc.integer({ min: 0, max: 150 }),
    }),
    fc.record({ add: fc.constant(false as const), pick: fc.nat() }),
  ),
  { minLength: 1, maxLength: 60 },
);

describe('customer gap histograms (unique customers and repeat usage of any window)', () => {
  it('the pure fold agrees with a brute-force count for every window of up to 90 days', () => {
    fc.assert(
      fc.property(operations, (ops) => {
        const live: Use[] = [];
        const days = new Map<string, Record<string, DayEntry>>(); // customer → day → entry
        const histograms = new Map<number, GapHistogram>();
        const apply = (day: string, changes: ReturnType<typeof gapChanges>) => {
          for (const [d, delta] of changes)
            histograms.set(dayNumber(d) - BASE, applyGapChanges(histograms.get(dayNumber(d) - BASE) ?? {}, delta));
        };
        for (const op of ops) {
          if (op.add) {
            const customer = `c${op.customer}`;
            const mine = days.get(customer) ?? {};
            const day = dayAt(op.day);
            apply(day, gapChanges(day, neighbours(mine, day), 1));
            const e = mine[day] ?? [0, 0, 0];
            days.set(customer, { ...mine, [day]: [e[0] + 1, 0, 0] });
            live.push({ customer, day: op.day });
          } else if (live.length > 0) {
            const [use] = live.splice(op.pick % live.length, 1);
            const mine = days.get(use!.customer)!;
            const day = dayAt(use!.day);
            apply(day, gapChanges(day, neighbours(mine, day, 1), -1));
            const e = mine[day]!;
            const next = { ...mine };
            if (e[0] === 1) delete next[day];
            else next[day] = [e[0] - 1, 0, 0];
            days.set(use!.customer, next);
          }
        }
        for (const [from, to] of windows(150))
          expect(countFrom(histograms, from, to), `[${from}, ${to}]`).to.deep.equal(bruteForce(live, from, to));
        // no empty keys are kept: a histogram only holds live uses
        for (const h of histograms.values()) for (const n of Object.values(h)) expect(n).to.be.greaterThan(0);
      }),
      { numRuns: 150 },
    );
  });

  it('knows the gaps of a small case by hand: uses on days 0, 0, 5 and a rollback of one day-0 use', () => {
    const h = new Map<number, GapHistogram>();
    const add = (changes: ReturnType<typeof gapChanges>) => {
      for (const [d, delta] of changes)
        h.set(dayNumber(d) - BASE, applyGapChanges(h.get(dayNumber(d) - BASE) ?? {}, delta));
    };
    const d0 = dayAt(0);
    const d5 = dayAt(5);
    add(gapChanges(d5, neighbours({}, d5), 1));
    add(gapChanges(d0, neighbours({ [d5]: [1, 0, 0] }, d0), 1)); // inserted before day 5
    add(gapChanges(d0, neighbours({ [d0]: [1, 0, 0], [d5]: [1, 0, 0] }, d0), 1));
    expect(Object.fromEntries(h)).to.deep.equal({ 0: { '90.90': 1, '0.90': 1 }, 5: { '5.5': 1 } });
    expect(countFrom(h, 0, 5)).to.deep.equal({ unique: 1, repeat: 1 });
    expect(countFrom(h, 1, 5)).to.deep.equal({ unique: 1, repeat: 0 });
    add(gapChanges(d0, neighbours({ [d0]: [2, 0, 0], [d5]: [1, 0, 0] }, d0, 1), -1));
    expect(Object.fromEntries(h)).to.deep.equal({ 0: { '90.90': 1 }, 5: { '5.90': 1 } });
  });

  describe('through the analytics projection and the ProjectionRunner', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gaps-'));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    const applied = (position: number, id: string, customer: string, day: number): RecordedEvent =>
      recorded(
        voucherApplied({
          applicationId: id,
          code: 'C',
          orderId: `o_${id}`,
          customerId: customer,
          orderValue: 1_000,
          discountAmount: 100,
          finalAmount: 900,
          currency: 'USD',
          orderFingerprint: 'f',
          customerFingerprint: 'g',
          appliedAt: `${dayAt(day)}T12:00:00.000Z`,
        }),
        position,
        { revision: position, recordedAt: dayAt(day) },
      );
    const rolledBack = (position: number, id: string, customer: string, day: number): RecordedEvent =>
      recorded(
        voucherApplicationRolledBack({
          applicationId: id,
          orderId: `o_${id}`,
          customerId: customer,
          discountAmount: 100,
          finalAmount: 900,
          orderValue: 1_000,
          appliedAt: `${dayAt(day)}T12:00:00.000Z`,
          rolledBackAt: `${dayAt(day)}T13:00:00.000Z`,
        }),
        position,
        { revision: position, recordedAt: dayAt(day) },
      );

    it('matches the brute-force count for every window, whatever the batches, and redelivery changes nothing', async function () {
      this.timeout(120_000);
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          operations,
          fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 10 }),
          async (ops, cuts) => {
            run += 1;
            const reads = SqliteReadStore.open(path.join(dir, `read-${run}.db`));
            try {
              const runner = new ProjectionRunner({} as EventStore, reads, analyticsProjections, 'analytics.test');
              const events: RecordedEvent[] = [];
              const live: Array<Use & { id: string }> = [];
              ops.forEach((op, i) => {
                if (op.add) {
                  const use = { id: `a${i}`, customer: `c${op.customer}`, day: op.day };
                  live.push(use);
                  events.push(applied(events.length + 1, use.id, use.customer, use.day));
                } else if (live.length > 0) {
                  const [use] = live.splice(op.pick % live.length, 1);
                  events.push(rolledBack(events.length + 1, use!.id, use!.customer, use!.day));
                }
              });
              for (let at = 0, c = 0; at < events.length; c += 1) {
                const size = cuts[c % cuts.length]!;
                await runner.handle(events.slice(at, at + size));
                at += size;
              }
              const read = async () =>
                new Map(
                  (await reads.find<DailyDoc>(COLLECTIONS.daily, {})).map((d) => [dayNumber(d.date) - BASE, d.gaps]),
                );
              const histograms = await read();
              for (const [from, to] of windows(150))
                expect(countFrom(histograms, from, to), `[${from}, ${to}]`).to.deep.equal(bruteForce(live, from, to));
              await runner.handle(events); // delivered again
              expect(await read()).to.deep.equal(histograms);
            } finally {
              await reads.close();
            }
          },
        ),
        { numRuns: 40 },
      );
    });
  });
});
