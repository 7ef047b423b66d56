import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemorySnapshotStore } from '../../src/infrastructure/snapshots/memorySnapshotStore.ts';
import { MongoSnapshotStore } from '../../src/infrastructure/snapshots/mongoSnapshotStore.ts';
import { SqliteSnapshotStore } from '../../src/infrastructure/snapshots/sqliteSnapshotStore.ts';
import { memoryMongo } from '../support/memoryMongo.ts';
import { mongo, scratchDatabase, whenMongo } from './mongoServer.ts';
import { snapshotStoreContract } from './snapshotStoreContract.ts';

snapshotStoreContract('MemorySnapshotStore', async () => {
  const store = new MemorySnapshotStore();
  return { store, cleanup: () => store.close() };
});

snapshotStoreContract('SqliteSnapshotStore', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snapshots-'));
  const store = SqliteSnapshotStore.open(path.join(dir, 'snapshots.db'));
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

snapshotStoreContract('SqliteSnapshotStore, saves on the snapshot writer thread', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snapshots-'));
  const store = SqliteSnapshotStore.open(path.join(dir, 'snapshots.db'), { writer: 'thread' });
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

snapshotStoreContract('MongoSnapshotStore over memoryMongo', async () => {
  const { db, startSession } = memoryMongo();
  return { store: new MongoSnapshotStore(db, startSession), cleanup: async () => {} };
});

whenMongo('SnapshotStore contract: MongoSnapshotStore', () => {
  snapshotStoreContract('MongoSnapshotStore', async () => {
    const { client } = await mongo();
    const db = await scratchDatabase('snapshottest');
    return {
      store: new MongoSnapshotStore(db, () => client.startSession()),
      cleanup: async () => {
        await db.dropDatabase();
      },
    };
  });
});
