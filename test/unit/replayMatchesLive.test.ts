/**
 * A replay (rebuildGroups, the core of `npm run replay`: every group in one pass over the log, in
 * pages, in the stores' bulk-write mode; from a plain log and from a SQLite event store, which
 * decodes only the event types the projections handle) gives exactly the read models of every group that the
 * live projector gives when it folds the same log commit by commit, on SQLite read stores.
 * The log exercises every event type every projection handles, with enough applications on the
 * same vouchers, customers and orders that pages split their histories.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { EventLog, RecordedEvent } from '../../src/core/eventStore.ts';
import { collectionsOf } from '../../src/core/projection.ts';
import { rebuildGroups } from '../../src/core/projectionGroups.ts';
import { ProjectionRunner } from '../../src/core/projectionRunner.ts';
import type { Document } from '../../src/core/readStore.ts';
import { PROJECTION_GROUPS } from '../../src/projections/index.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { realisticHistory, recorded, voucherApplicationRolledBack, voucherApplied } from '../fixtures/events.ts';

/**
 * realisticHistory, then applications (some rolled back) spread over its two vouchers, customers
 * and days, among events no projection handles (and ending with two of them).
 */
const history = (): RecordedEvent[] => {
  const log = realisticHistory();
  const extra: Array<{ type: string; data: object }> = [];
  for (let i = 0; i < 60; i += 1) {
    const voucher = i % 3 === 0 ? { voucherId: 'v_2', code: 'FLAT5', currency: 'USD', discountAmount: 500 } : {};
    const appliedAt = `2026-01-${String(10 + (i % 9)).padStart(2, '0')}T10:00:${String(i % 60).padStart(2, '0')}Z`;
    const customer = i % 4 === 3 ? {} : { customerId: `cus_${i % 5}`, customerSegment: i % 2 ? 'vip' : 'new' };
    extra.push(
      voucherApplied({ ...voucher, applicationId: `va_x${i}`, orderId: `ord_x${i % 40}`, ...customer, appliedAt }),
    );
    // the order's own record of the application: no projection handles it
    if (i % 5 === 0) extra.push({ type: 'OrderVoucherConfirmed', data: { orderId: `ord_x${i % 40}`, code: 'X' } });
    if (i % 7 === 6)
      extra.push(
        voucherApplicationRolledBack({
          ...(i % 3 === 0 ? { voucherId: 'v_2' } : {}),
          applicationId: `va_x${i}`,
          orderId: `ord_x${i % 40}`,
          ...(customer.customerId ? { customerId: customer.customerId } : {}),
          appliedAt,
          rolledBackAt: '2026-01-20T00:00:00Z',
        }),
      );
  }
  // the log ends with events no projection handles
  extra.push(...[0, 1].map((n) => ({ type: 'OrderVoucherConfirmed', data: { orderId: `ord_end${n}`, code: 'X' } })));
  return [
    ...log,
    ...extra.map((event, i) => recorded(event, log.length + 1 + i, { recordedAt: '2026-01-20T00:00:00Z' })),
  ];
};

/** The log as an EventLog: readAll pages by position, as the SQLite event store does. */
const eventLog = (events: RecordedEvent[]): EventLog =>
  ({
    readAll: async ({ after = 0, maxCount = Infinity } = {}) =>
      events.filter((e) => e.position > after).slice(0, maxCount),
    headPosition: async () => events.at(-1)?.position ?? 0,
  }) as EventLog;

type Snapshot = Record<string, { collections: Record<string, Document[]>; checkpoint: number }>;

const snapshot = async (stores: Record<string, SqliteReadStore>): Promise<Snapshot> => {
  const out: Snapshot = {};
  for (const group of PROJECTION_GROUPS) {
    const reads = stores[group.name]!;
    const collections: Record<string, Document[]> = {};
    for (const c of collectionsOf(group.projections)) collections[c] = await reads.find(c, {}, { sort: [['id', 1]] });
    out[group.name] = { collections, checkpoint: await reads.getCheckpoint(group.checkpoint) };
  }
  return out;
};

describe('replay gives the read models of the live projector', () => {
  const events = history();
  let dir: string;
  const open = (name: string) => {
    const stores: Record<string, SqliteReadStore> = {};
    for (const group of PROJECTION_GROUPS)
      stores[group.name] = SqliteReadStore.open(path.join(dir, `${name}-${group.name}.db`));
    return stores;
  };
  const closeAll = async (stores: Record<string, SqliteReadStore>) => {
    for (const store of Object.values(stores)) await store.close();
  };

  /** Each event folded as its own commit, as the live projector receives them. */
  const live = async (): Promise<Snapshot> => {
    const stores = open('live');
    try {
      for (const group of PROJECTION_GROUPS) {
        const runner = new ProjectionRunner(eventLog(events), stores[group.name]!, group.projections, group.checkpoint);
        for (const event of events) await runner.handle([event]);
      }
      return await snapshot(stores);
    } finally {
      await closeAll(stores);
    }
  };

  /** The log in a SqliteEventStore, which decodes only the types the projections handle. */
  const storedLog = async (): Promise<SqliteEventStore> => {
    const store = SqliteEventStore.open(path.join(dir, 'events.db'));
    for (const event of events) {
      const { position } = await store.appendToStream(event.streamId, [
        { type: event.type, data: event.data, metadata: event.metadata },
      ]);
      expect(position).to.equal(event.position);
    }
    return store;
  };

  const replay = async (name: string, pageSize?: number, log: EventLog = eventLog(events)): Promise<Snapshot> => {
    const stores = open(name);
    try {
      // A stale document in every collection: the replay must remove it.
      for (const group of PROJECTION_GROUPS)
        await stores[group.name]!.writeBatch({
          upserts: collectionsOf(group.projections).map((collection) => ({ collection, doc: { id: 'stale' } })),
          checkpoint: { name: group.checkpoint, position: 3 },
        });
      await rebuildGroups(
        log,
        PROJECTION_GROUPS.map((g) => ({
          reads: stores[g.name]!,
          projections: g.projections,
          checkpoint: g.checkpoint,
        })),
        undefined,
        pageSize,
      );
      return await snapshot(stores);
    } finally {
      await closeAll(stores);
    }
  };

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-live-'));
  });
  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the log exercises every event type of every projection', () => {
    const types = new Set(events.map((e) => e.type));
    for (const group of PROJECTION_GROUPS)
      for (const projection of group.projections)
        for (const type of projection.handles) expect(types, `${projection.name} handles ${type}`).to.include(type);
  });

  it('every group, whole log in one page and in pages of 7, equals the live fold', async () => {
    const expected = await live();
    for (const group of PROJECTION_GROUPS) {
      expect(expected[group.name]!.checkpoint).to.equal(events.at(-1)!.position);
      expect(Object.values(expected[group.name]!.collections).flat(), group.name).to.not.be.empty;
    }
    expect(await replay('one-page')).to.deep.equal(expected);
    expect(await replay('pages-of-7', 7)).to.deep.equal(expected);
    const stored = await storedLog();
    try {
      expect(stored.readAllOfTypes).to.be.a('function');
      expect(await replay('stored-one-page', undefined, stored)).to.deep.equal(expected);
      expect(await replay('stored-pages-of-7', 7, stored)).to.deep.equal(expected);
    } finally {
      await stored.close();
    }
  });
});
