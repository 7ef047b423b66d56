/**
 * Every projection of every group, through the real runner, into the MongoDB read store (over
 * test/support/memoryMongo.ts): the read model equals the SQLite store's for a realistic log,
 * and delivering events again (next batch, same batch, whole log) changes nothing.
 */
import { expect } from 'chai';
import { PROJECTION_GROUPS } from '../../src/projections/index.ts';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { realisticHistory } from '../fixtures/events.ts';
import { memoryMongo } from '../support/memoryMongo.ts';
import { deliveries, projectionSpecification, type OpenReadStore } from '../support/projectionSpecification.ts';

const mongoReads: OpenReadStore = async () => {
  const { db, startSession } = memoryMongo();
  return { reads: MongoReadStore.open(db, startSession), dispose: async () => {} };
};

describe('projections on the MongoDB read store', () => {
  const history = realisticHistory();

  for (const group of PROJECTION_GROUPS) {
    for (const projection of group.projections) {
      describe(`${group.name}: ${projection.name}`, () => {
        it('gives the read model the SQLite store gives', async () => {
          const onMongo = await projectionSpecification(projection, mongoReads).project(deliveries.once(history));
          const onSqlite = await projectionSpecification(projection).project(deliveries.once(history));
          expect(Object.values(onSqlite.collections).flat()).to.not.be.empty;
          expect(onMongo).to.deep.equal(onSqlite);
        });

        it('gives the same read model when every event is delivered again', async () => {
          const spec = projectionSpecification(projection, mongoReads);
          const once = await spec.project(deliveries.once(history));
          for (const [name, deliver] of Object.entries(deliveries).filter(([n]) => n !== 'once')) {
            expect(await spec.project(deliver(history)), name).to.deep.equal(once);
          }
        });
      });
    }
  }
});
