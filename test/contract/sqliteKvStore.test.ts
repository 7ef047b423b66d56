import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteKvStore } from '../../src/infrastructure/kvStore/sqliteKvStore.ts';
import { kvStoreContract } from './kvStoreContract.ts';

kvStoreContract('SqliteKvStore', async (clock) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-'));
  const store = SqliteKvStore.open(path.join(dir, 'state.db'), clock, { relaxedNamespaces: ['quotes'] });
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
