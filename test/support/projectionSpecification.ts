/**
 * A specification for any projection (src/core/projection.ts, either kind): feeds recorded events
 * through the real ProjectionRunner into a read store (SQLite in a temp dir unless told; the runner keeps the
 * `_position` of the last event applied on every document, and skips an event at or before it),
 * and reads back every collection the projection writes.
 *
 *   const spec = projectionSpecification(voucherUsage);
 *   const once = await spec.project([[e1], [e2], [e3]]);          // batches as the store delivers them
 *   const twice = await spec.project([[e1], [e1], [e2], [e2]]);   // each event redelivered
 *   expect(twice).to.deep.equal(once);
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EventStore, RecordedEvent } from '../../src/core/eventStore.ts';
import { collectionsOf, type AnyProjection } from '../../src/core/projection.ts';
import { ProjectionRunner } from '../../src/core/projectionRunner.ts';
import type { Document, ReadStore } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

/** Every document of every collection the projection writes, by collection, sorted by id; and the checkpoint. */
export interface ReadModel {
  collections: Record<string, Document[]>;
  checkpoint: number;
}

const CHECKPOINT = 'spec';
/** The runner is driven batch by batch here, never subscribed: it needs no event store. */
const NO_EVENT_STORE = {} as EventStore;

/** An empty read store for one run, and how to dispose of it. */
export type OpenReadStore = () => Promise<{ reads: ReadStore; dispose: () => Promise<void> }>;

/** The default: a SQLite read store in a temp dir. */
export const sqliteReads: OpenReadStore = async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'projection-spec-'));
  const reads = SqliteReadStore.open(path.join(dir, 'read.db'));
  return {
    reads,
    dispose: async () => {
      await reads.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
};

export const projectionSpecification = (projection: AnyProjection, open: OpenReadStore = sqliteReads) => ({
  /** The read model after the runner has handled `batches` in order, from an empty store. */
  async project(batches: RecordedEvent[][]): Promise<ReadModel> {
    const { reads, dispose } = await open();
    try {
      const runner = new ProjectionRunner(NO_EVENT_STORE, reads, [projection], CHECKPOINT);
      for (const batch of batches) await runner.handle(batch);
      const collections: Record<string, Document[]> = {};
      for (const c of collectionsOf([projection])) collections[c] = await reads.find(c, {}, { sort: [['id', 1]] });
      return { collections, checkpoint: await reads.getCheckpoint(CHECKPOINT) };
    } finally {
      await dispose();
    }
  },
});

/** Delivery orders of the same events, as an at-least-once subscription may produce them. */
export const deliveries = {
  /** Each event once, one per batch. */
  once: (events: RecordedEvent[]): RecordedEvent[][] => events.map((e) => [e]),
  /** Each event delivered again in the next batch. */
  eachTwice: (events: RecordedEvent[]): RecordedEvent[][] => events.flatMap((e) => [[e], [e]]),
  /** Each event twice in a row within one batch. */
  doubledInOneBatch: (events: RecordedEvent[]): RecordedEvent[][] => [events.flatMap((e) => [e, e])],
  /** The whole log, then the whole log again (a subscription restarted from position 0). */
  replayedFromStart: (events: RecordedEvent[]): RecordedEvent[][] => [events, events],
};
