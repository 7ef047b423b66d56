import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { readStoreContract } from './readStoreContract.ts';
import { mongo, scratchDatabase, whenMongo } from './mongoServer.ts';

whenMongo('ReadStore contract: MongoReadStore', () => {
  readStoreContract('MongoReadStore', async () => {
    const { client } = await mongo();
    const db = await scratchDatabase('readtest');
    const store = MongoReadStore.open(db, () => client.startSession());
    return {
      store,
      cleanup: async () => {
        await store.close();
        await db.dropDatabase();
      },
    };
  });
});
