import { MongoKvStore } from '../../src/infrastructure/kvStore/mongoKvStore.ts';
import { kvStoreContract } from './kvStoreContract.ts';
import { mongo, scratchDatabase, whenMongo } from './mongoServer.ts';

whenMongo('KvStore contract: MongoKvStore', () => {
  kvStoreContract('MongoKvStore', async (clock) => {
    const { client } = await mongo();
    const db = await scratchDatabase('kvtest');
    const store = await MongoKvStore.open(db, () => client.startSession(), clock, { relaxedNamespaces: ['quotes'] });
    return {
      store,
      cleanup: async () => {
        await store.close();
        await db.dropDatabase();
      },
    };
  });
});
