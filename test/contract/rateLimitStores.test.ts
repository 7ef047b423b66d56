import { expect } from 'chai';
import { MemoryStore, type Options } from 'express-rate-limit';
import { mongoRateLimitStores } from '../../src/infrastructure/rateLimit/mongoRateLimitStore.ts';
import { rateLimitStoreContract } from './rateLimitStoreContract.ts';
import { scratchDatabase, whenMongo } from './mongoServer.ts';

rateLimitStoreContract('MemoryStore (express-rate-limit)', async () => {
  const store = new MemoryStore();
  return { store, cleanup: async () => store.shutdown() };
});

whenMongo('rate-limit store contract: MongoRateLimitStore', () => {
  rateLimitStoreContract('MongoRateLimitStore', async () => {
    const db = await scratchDatabase('ratetest');
    const storeFor = await mongoRateLimitStores(db);
    return { store: storeFor('read'), cleanup: async () => void (await db.dropDatabase()) };
  });

  describe('MongoRateLimitStore on a server', function () {
    it('gives concurrent hits of one key, from two instances, each its own count', async function () {
      const db = await scratchDatabase('ratetest');
      try {
        const [a, b] = [(await mongoRateLimitStores(db))('read'), (await mongoRateLimitStores(db))('read')];
        for (const store of [a, b]) store.init({ windowMs: 60_000 } as Options);
        const counts = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).increment('key_1').then((r) => r.totalHits)),
        );
        expect(counts.sort((x, y) => x - y)).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 1));
        // groups count apart
        const other = (await mongoRateLimitStores(db))('apply');
        other.init({ windowMs: 60_000 } as Options);
        expect((await other.increment('key_1')).totalHits).to.equal(1);
        await other.resetAll();
        expect((await a.get('key_1'))?.totalHits).to.equal(20);
      } finally {
        await db.dropDatabase();
      }
    });
  });
});
