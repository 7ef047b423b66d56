/**
 * Every projection of every group, through the real runner and a SQLite read store: delivering
 * each event of a realistic log twice (in the next batch, twice in one batch, or the whole log
 * again) gives the read model that delivering it once gives.
 */
import { expect } from 'chai';
import { isDocumentSet } from '../../src/core/projection.ts';
import { PROJECTION_GROUPS } from '../../src/projections/index.ts';
import { realisticHistory } from '../fixtures/events.ts';
import { deliveries, projectionSpecification } from '../support/projectionSpecification.ts';

describe('projections: redelivery changes nothing', () => {
  const history = realisticHistory();

  for (const group of PROJECTION_GROUPS) {
    describe(`${group.name} group`, () => {
      for (const projection of group.projections) {
        const kind = isDocumentSet(projection) ? 'document set' : 'projection';
        describe(`${projection.name} (${kind})`, () => {
          const spec = projectionSpecification(projection);

          it('the log exercises every event type it handles, and it writes documents', async () => {
            const types = new Set(history.map((e) => e.type));
            for (const type of projection.handles) expect(types, `${projection.name} handles ${type}`).to.include(type);
            const once = await spec.project(deliveries.once(history));
            const written = Object.values(once.collections).flat();
            expect(written, 'documents written').to.not.be.empty;
            expect(once.checkpoint).to.equal(history.at(-1)!.position);
          });

          for (const [name, deliver] of Object.entries(deliveries).filter(([n]) => n !== 'once')) {
            it(`${name}: the same read model as each event once`, async () => {
              const once = await spec.project(deliveries.once(history));
              expect(await spec.project(deliver(history))).to.deep.equal(once);
            });
          }
        });
      }
    });
  }
});
