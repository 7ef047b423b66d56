/**
 * ProjectionRunner hands a DocumentSetProjection's evolve, as `owned`, the documents evolve
 * returned as new objects for earlier events of the same batch (which evolve may change in
 * place), and never a document loaded from the store or one evolve returned unchanged.
 */
import { expect } from 'chai';
import type { EventLog } from '../../src/core/eventStore.ts';
import type { DocumentSetProjection } from '../../src/core/projection.ts';
import { ProjectionRunner } from '../../src/core/projectionRunner.ts';
import type { Document } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { recorded } from '../fixtures/events.ts';

describe('ProjectionRunner: the documents evolve owns within a batch', () => {
  it('owned holds what evolve returned as a new object earlier in the batch, nothing loaded or kept', async () => {
    const seen: Array<{ position: number; counterOwned: boolean; labelOwned: boolean }> = [];
    // every event counts on `counter` (a new object each time) and touches `label`, kept as loaded
    const projection: DocumentSetProjection = {
      name: 'counting',
      collections: { items: [] },
      handles: ['Counted'],
      touches: () => [
        { collection: 'items', id: 'counter' },
        { collection: 'items', id: 'label' },
      ],
      evolve: (docs, event, owned) => {
        const counter = docs.get('items/counter') ?? null;
        const label = docs.get('items/label') ?? null;
        seen.push({
          position: event.position,
          counterOwned: counter !== null && owned?.has(counter) === true,
          labelOwned: label !== null && owned?.has(label) === true,
        });
        const changes = new Map<string, Document | null>([
          ['items/counter', { id: 'counter', n: ((counter?.n as number | undefined) ?? 0) + 1 }],
        ]);
        if (label) changes.set('items/label', label);
        return changes;
      },
    };
    const reads = SqliteReadStore.open(':memory:');
    try {
      await reads.writeBatch({
        upserts: [
          { collection: 'items', doc: { id: 'counter', n: 10, _position: 0 } },
          { collection: 'items', doc: { id: 'label', text: 'kept', _position: 0 } },
        ],
      });
      const runner = new ProjectionRunner({} as EventLog, reads, [projection], 'counting');
      const batch = [1, 2, 3].map((position) => recorded({ type: 'Counted', data: {} }, position));
      await runner.handle(batch);
      expect(seen).to.deep.equal([
        { position: 1, counterOwned: false, labelOwned: false },
        { position: 2, counterOwned: true, labelOwned: false },
        { position: 3, counterOwned: true, labelOwned: false },
      ]);
      expect(await reads.get('items', 'counter')).to.deep.equal({ id: 'counter', n: 13, _position: 3 });
      // a second batch starts with nothing owned: its documents come from the store again
      seen.length = 0;
      await runner.handle([recorded({ type: 'Counted', data: {} }, 4)]);
      expect(seen).to.deep.equal([{ position: 4, counterOwned: false, labelOwned: false }]);
    } finally {
      await reads.close();
    }
  });
});
