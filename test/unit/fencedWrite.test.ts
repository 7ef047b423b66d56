/** WriteBatch.fence on the embedded SQLite read store (the MongoDB store's is covered by test/http/roles.test.ts). */
import { expect } from 'chai';
import { FencedWriteError } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

describe('SqliteReadStore: a fenced batch', () => {
  it('is written while the fence document holds the value, refused (nothing written) once it does not', async () => {
    const store = SqliteReadStore.open(':memory:');
    const fence = { collection: 'leases', id: 'core', field: 'token', value: null };
    await store.writeBatch({ upserts: [{ collection: 'leases', doc: { id: 'core', token: 'a' } }], fence });
    const held = { ...fence, value: 'a' };
    await store.writeBatch({
      upserts: [{ collection: 'docs', doc: { id: 'x' } }],
      checkpoint: { name: 'c', position: 1 },
      fence: held,
    });
    await store.writeBatch({ upserts: [{ collection: 'leases', doc: { id: 'core', token: 'b' } }], fence: held });
    const late = await store
      .writeBatch({
        upserts: [{ collection: 'docs', doc: { id: 'y' } }],
        checkpoint: { name: 'c', position: 9 },
        fence: held,
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(late).to.be.instanceOf(FencedWriteError);
    expect(await store.getCheckpoint('c')).to.equal(1);
    expect(await store.get('docs', 'y')).to.equal(null);
    const absent = await store.writeBatch({ upserts: [], checkpoint: { name: 'c', position: 2 }, fence }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(absent, 'null: the document must be absent').to.be.instanceOf(FencedWriteError);
    await store.close();
  });
});
