/**
 * The DeliveryStorage contract on each implementation: the SQLite table, the ReadStore documents
 * over the in-memory MongoDB stand-in, and over a real MongoDB server when MONGODB_URL is set.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { ReadStoreDeliveries } from '../../src/infrastructure/webhooks/readStoreDeliveries.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { memoryMongo } from '../support/memoryMongo.ts';
import { deliveryStorageContract } from './deliveryStorageContract.ts';
import { mongo, scratchDatabase, whenMongo } from './mongoServer.ts';

deliveryStorageContract('SqliteDeliveries', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deliveries-'));
  const storage = new SqliteDeliveries(SqliteReadStore.open(path.join(dir, 'webhooks.db')));
  return {
    storage,
    cleanup: async () => {
      await storage.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

deliveryStorageContract('ReadStoreDeliveries over MongoReadStore over memoryMongo', async () => {
  const { db, startSession } = memoryMongo();
  return { storage: new ReadStoreDeliveries(MongoReadStore.open(db, startSession)), cleanup: async () => {} };
});

whenMongo('DeliveryStorage contract: ReadStoreDeliveries over MongoDB', () => {
  deliveryStorageContract('ReadStoreDeliveries over MongoDB', async () => {
    const { client } = await mongo();
    const db = await scratchDatabase('deliverytest');
    const storage = new ReadStoreDeliveries(MongoReadStore.open(db, () => client.startSession()));
    return {
      storage,
      cleanup: async () => {
        await storage.close();
        await db.dropDatabase();
      },
    };
  });
});
