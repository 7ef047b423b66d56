/**
 * Contract every SnapshotStore implementation must pass (memory, SQLite, MongoDB): the port's
 * semantics only (src/core/snapshotStore.ts).
 */
import { expect } from 'chai';
import type { SnapshotStore } from '../../src/core/snapshotStore.ts';

export type SnapshotStoreFactory = () => Promise<{ store: SnapshotStore; cleanup: () => Promise<void> }>;

export function snapshotStoreContract(name: string, factory: SnapshotStoreFactory): void {
  describe(`SnapshotStore contract: ${name}`, function () {
    let store: SnapshotStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
    });
    afterEach(async () => {
      await cleanup?.();
    });

    it('has no snapshot and no entry for a stream never saved', async () => {
      expect(await store.load('voucher-v1')).to.equal(undefined);
      expect([...(await store.entries('voucher-v1', ['a:x', 'o:y']))]).to.deep.equal([]);
      expect([...(await store.entries('voucher-v1', []))]).to.deep.equal([]);
    });

    it('saves the core and the entries at a revision; entries are per stream and keep the revision that wrote them', async () => {
      expect(
        await store.save('voucher-v1', -1, 9, { usageCount: 3 }, [
          ['a:x', { id: 'x' }],
          ['c:k', 2],
        ]),
      ).to.equal(true);
      expect(await store.save('voucher-v2', -1, 4, { usageCount: 1 }, [['a:x', { id: 'other' }]])).to.equal(true);
      expect(await store.load('voucher-v1')).to.deep.equal({ revision: 9, core: { usageCount: 3 } });
      expect(
        await store.save('voucher-v1', 9, 19, { usageCount: 2 }, [
          ['c:k', 0],
          ['o:y', null],
        ]),
      ).to.equal(true);
      expect(await store.load('voucher-v1')).to.deep.equal({ revision: 19, core: { usageCount: 2 } });
      const found = await store.entries('voucher-v1', ['a:x', 'c:k', 'o:y', 'o:never']);
      expect(Object.fromEntries(found)).to.deep.equal({
        'a:x': { value: { id: 'x' }, revision: 9 },
        'c:k': { value: 0, revision: 19 }, // a value back to nothing is kept, with its revision
        'o:y': { value: null, revision: 19 },
      });
      expect(Object.fromEntries(await store.entries('voucher-v2', ['a:x']))).to.deep.equal({
        'a:x': { value: { id: 'other' }, revision: 4 },
      });
    });

    it('writes nothing unless the stored snapshot is still at the base the writer started from', async () => {
      expect(await store.save('voucher-v1', 0, 5, { n: 1 }, [['a:x', 1]])).to.equal(false); // none stored: base is -1
      expect(await store.save('voucher-v1', -1, 5, { n: 1 }, [['a:x', 1]])).to.equal(true);
      expect(await store.save('voucher-v1', -1, 7, { n: 2 }, [['a:x', 2]])).to.equal(false); // another writer won
      expect(await store.save('voucher-v1', 4, 7, { n: 2 }, [['a:y', 2]])).to.equal(false);
      expect(await store.load('voucher-v1')).to.deep.equal({ revision: 5, core: { n: 1 } });
      expect(Object.fromEntries(await store.entries('voucher-v1', ['a:x', 'a:y']))).to.deep.equal({
        'a:x': { value: 1, revision: 5 },
      });
      const both = await Promise.all([
        store.save('voucher-v1', 5, 8, { n: 3 }, [['a:x', 3]]),
        store.save('voucher-v1', 5, 9, { n: 4 }, [['a:x', 4]]),
      ]);
      expect(both.filter(Boolean)).to.have.length(1); // two writers on one base: one of them
      const stored = await store.load('voucher-v1');
      expect(Object.fromEntries(await store.entries('voucher-v1', ['a:x']))).to.deep.equal({
        'a:x': { value: (stored!.core as { n: number }).n, revision: stored!.revision },
      });
    });

    it('round-trips keys and values of any text exactly', async () => {
      const key = 'c:a.b$c "quoted" \u00e9\u{1F600}\u0000';
      const value = { 'x.y': '$z', nested: [1, 'two', { three: null }], big: 2 ** 52 };
      expect(await store.save('voucher-odd id', -1, 0, { code: 'ÉTÉ' }, [[key, value]])).to.equal(true);
      expect(await store.load('voucher-odd id')).to.deep.equal({ revision: 0, core: { code: 'ÉTÉ' } });
      expect(Object.fromEntries(await store.entries('voucher-odd id', [key]))).to.deep.equal({
        [key]: { value, revision: 0 },
      });
    });
  });
}
