/**
 * The contract suites on the Mongo adapters over test/support/memoryMongo.ts: the adapters'
 * logic (translation, id mapping, tiebreaks, atomic batches, quotas) against every contract
 * case, with MongoDB's query rules evaluated in memory. The same suites run on a real server
 * in test/contract/mongo*.test.ts when MONGODB_URL is set.
 */
import { MongoKvStore } from '../../src/infrastructure/kvStore/mongoKvStore.ts';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { kvStoreContract } from '../contract/kvStoreContract.ts';
import { readStoreContract } from '../contract/readStoreContract.ts';
import { memoryMongo } from '../support/memoryMongo.ts';

readStoreContract('MongoReadStore over memoryMongo', async () => {
  const { db, startSession } = memoryMongo();
  return { store: MongoReadStore.open(db, startSession), cleanup: async () => {} };
});

kvStoreContract('MongoKvStore over memoryMongo', async (clock) => {
  const { db, startSession } = memoryMongo();
  const store = await MongoKvStore.open(db, startSession, clock, { relaxedNamespaces: ['quotes'] });
  return { store, cleanup: async () => {} };
});
