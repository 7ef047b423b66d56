/**
 * Contract every KvStore implementation must pass (SQLite, MongoDB). Only port semantics
 * (src/core/kvStore.ts) are tested here. Each test gets a fresh store on a FakeClock set far in
 * the future, so that a server's own expiry (MongoDB's TTL monitor, on the server's clock)
 * never removes a record before the test's clock says it expired.
 */
import { expect } from 'chai';
import type { KvStore } from '../../src/core/kvStore.ts';
import { FakeClock } from '../support/fakeClock.ts';

export type KvStoreFactory = (clock: FakeClock) => Promise<{ store: KvStore; cleanup: () => Promise<void> }>;

const quota = (owner: string, limit: number) => ({ owner, limit });

export function kvStoreContract(name: string, factory: KvStoreFactory): void {
  describe(`KvStore contract: ${name}`, function () {
    let clock: FakeClock;
    let kv: KvStore;
    let cleanup: () => Promise<void>;

    beforeEach(async function () {
      clock = new FakeClock('2100-03-01T00:00:00Z');
      ({ store: kv, cleanup } = await factory(clock));
    });
    afterEach(async function () {
      await cleanup?.();
    });

    const now = () => clock.now().getTime();

    it('stores, reads and deletes JSON values until they expire; namespaces are apart', async function () {
      await kv.put('idempotency', 'k1', { status: 201, body: { id: 'v_1' } }, now() + 1_000);
      expect(await kv.get('idempotency', 'k1')).to.deep.equal({ status: 201, body: { id: 'v_1' } });
      expect(await kv.get('quotes', 'k1')).to.equal(null);
      clock.advance(999);
      expect(await kv.get('idempotency', 'k1')).to.deep.equal({ status: 201, body: { id: 'v_1' } });
      clock.advance(1);
      expect(await kv.get('idempotency', 'k1')).to.equal(null);
      await kv.put('idempotency', 'k2', 'x', now() + 1_000);
      await kv.delete('idempotency', 'k2');
      expect(await kv.get('idempotency', 'k2')).to.equal(null);
      await kv.delete('idempotency', 'never-written');
    });

    it('round-trips any JSON value exactly, keys with $ and dots and big numbers included', async function () {
      const value = {
        $set: { 'a.b': 1 },
        'x.y': [1, 'two', null, true, { $where: 'no' }],
        big: 9_007_199_254_740_991,
        int32: 2_147_483_647,
        float: 0.1,
        neg: -0,
        text: 'ünï "quoted" \\ 🎟',
        empty: {},
      };
      await kv.put('idempotency', '$key.with.dots', value, now() + 1_000);
      expect(await kv.get('idempotency', '$key.with.dots')).to.deep.equal(JSON.parse(JSON.stringify(value)));
      for (const scalar of ['text', 42, false, null, [1, [2]]]) {
        await kv.put('idempotency', 'scalar', scalar, now() + 1_000);
        expect(await kv.get('idempotency', 'scalar')).to.deep.equal(scalar);
      }
    });

    it('keeps keys that look alike apart (separators in namespaces and keys)', async function () {
      await kv.put('a', 'b:c', 1, now() + 1_000);
      await kv.put('a:b', 'c', 2, now() + 1_000);
      await kv.put('a","b', 'c', 3, now() + 1_000);
      expect(await kv.get('a', 'b:c')).to.equal(1);
      expect(await kv.get('a:b', 'c')).to.equal(2);
      expect(await kv.get('a","b', 'c')).to.equal(3);
    });

    it('put replaces the value and the expiry, shorter or longer', async function () {
      await kv.put('idempotency', 'k', 1, now() + 1_000);
      await kv.put('idempotency', 'k', 2, now() + 10);
      clock.advance(10);
      expect(await kv.get('idempotency', 'k')).to.equal(null);
      await kv.put('idempotency', 'k', 3, now() + 5_000);
      clock.advance(4_999);
      expect(await kv.get('idempotency', 'k')).to.equal(3);
    });

    it('putIfAbsent writes only over a missing or expired record', async function () {
      expect(await kv.putIfAbsent('admin', 'password', 'first', now() + 1_000)).to.equal(true);
      expect(await kv.putIfAbsent('admin', 'password', 'second', now() + 1_000)).to.equal(false);
      expect(await kv.get('admin', 'password')).to.equal('first');
      clock.advance(1_000);
      expect(await kv.putIfAbsent('admin', 'password', 'third', now() + 1_000)).to.equal(true);
      expect(await kv.get('admin', 'password')).to.equal('third');
      expect(await kv.putIfAbsent('other', 'password', 'apart', now() + 1_000)).to.equal(true);
    });

    it('concurrent putIfAbsent of one key: exactly one stores', async function () {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => kv.putIfAbsent('idempotency', 'race', i, now() + 1_000)),
      );
      expect(results.filter(Boolean)).to.have.length(1);
      expect(await kv.get('idempotency', 'race')).to.equal(results.indexOf(true));
    });

    it('purges expired records of every namespace and counts them', async function () {
      await kv.put('quotes', 'a', 1, now() + 10);
      await kv.put('idempotency', 'b', 2, now() + 10);
      await kv.put('idempotency', 'c', 3, now() + 10_000);
      expect(await kv.purgeExpired(now() + 9)).to.equal(0);
      expect(await kv.purgeExpired(now() + 10)).to.equal(2);
      expect(await kv.get('idempotency', 'c')).to.equal(3);
    });

    describe('records of an owner, for per-key quotas', function () {
      it('putOwned stores up to the limit of live records per owner, then refuses and says how many and until when', async function () {
        expect(await kv.putOwned('quotes', 'a', 1, now() + 1_000, quota('key_1', 2))).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'b', 2, now() + 2_000, quota('key_1', 2))).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'c', 3, now() + 3_000, quota('key_1', 2))).to.deep.equal({
          stored: false,
          count: 2,
          nextExpiresAt: now() + 1_000,
        });
        expect(await kv.get('quotes', 'c')).to.equal(null);
        expect(await kv.get('quotes', 'b')).to.equal(2);
        // another owner, another namespace: counted apart
        expect(await kv.putOwned('quotes', 'c', 3, now() + 3_000, quota('key_2', 2))).to.include({ stored: true });
        expect(await kv.putOwned('exports', 'c', 3, now() + 3_000, quota('key_1', 2))).to.include({ stored: true });
      });

      it('replacing a live record of the same owner adds none; taking over another owner’s key counts', async function () {
        await kv.putOwned('quotes', 'a', 1, now() + 1_000, quota('key_1', 1));
        expect(await kv.putOwned('quotes', 'a', 'again', now() + 5_000, quota('key_1', 1))).to.deep.equal({
          stored: true,
        });
        expect(await kv.get('quotes', 'a')).to.equal('again');
        await kv.putOwned('quotes', 'b', 1, now() + 1_000, quota('key_2', 1));
        expect(await kv.putOwned('quotes', 'b', 2, now() + 1_000, quota('key_1', 1))).to.include({ stored: false });
        expect(await kv.get('quotes', 'b')).to.equal(1);
      });

      it('an expired or deleted record frees its place at once (before any purge)', async function () {
        await kv.putOwned('quotes', 'a', 1, now() + 1_000, quota('key_1', 1));
        expect(await kv.putOwned('quotes', 'b', 1, now() + 1_000, quota('key_1', 1))).to.include({ stored: false });
        clock.advance(1_000);
        expect(await kv.putOwned('quotes', 'b', 1, now() + 1_000, quota('key_1', 1))).to.deep.equal({ stored: true });
        await kv.delete('quotes', 'b');
        expect(await kv.putOwned('quotes', 'c', 1, now() + 1_000, quota('key_1', 1))).to.deep.equal({ stored: true });
      });

      it('every way a record stops counting frees its place, and each refusal counts the live ones left', async function () {
        const q = quota('key_1', 3);
        const refused = (count: number, nextExpiresAt: number) => ({ stored: false, count, nextExpiresAt });
        for (const [key, ms] of [
          ['a', 1_000],
          ['b', 2_000],
          ['c', 3_000],
        ] as const)
          expect(await kv.putOwned('quotes', key, 1, now() + ms, q)).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'd', 1, now() + 3_000, q)).to.deep.equal(refused(3, now() + 1_000));
        clock.advance(1_000); // a expires (not purged)
        expect(await kv.putOwned('quotes', 'd', 1, now() + 3_000, q)).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'e', 1, now() + 3_000, q)).to.deep.equal(refused(3, now() + 1_000));
        await kv.delete('quotes', 'b');
        expect(await kv.putOwned('quotes', 'e', 1, now() + 3_000, q)).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'f', 1, now() + 3_000, q)).to.deep.equal(refused(3, now() + 2_000));
        await kv.put('quotes', 'c', 'nobody', now() + 2_000); // a plain put: owned by nobody
        expect(await kv.putOwned('quotes', 'f', 1, now() + 3_000, q)).to.deep.equal({ stored: true });
        expect(await kv.purgeExpired(now())).to.equal(1); // a
        expect(await kv.putOwned('quotes', 'g', 1, now() + 3_000, q)).to.deep.equal(refused(3, now() + 3_000));
        // another owner takes over one of key_1's live keys: key_1 has a place again
        expect(await kv.putOwned('quotes', 'd', 2, now() + 3_000, quota('key_2', 3))).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'g', 1, now() + 3_000, q)).to.deep.equal({ stored: true });
        expect((await kv.ownedKeys('quotes', 'key_1')).map((r) => r.key)).to.deep.equal(['e', 'f', 'g']);
        expect((await kv.ownedKeys('quotes', 'key_2')).map((r) => r.key)).to.deep.equal(['d']);
        // putIfAbsent over an expired owned record leaves it owned by nobody
        clock.advance(3_000);
        expect(await kv.putIfAbsent('quotes', 'e', 'fresh', now() + 1_000)).to.equal(true);
        expect(await kv.ownedKeys('quotes', 'key_1')).to.deep.equal([]);
        for (const key of ['h', 'i', 'j'])
          expect(await kv.putOwned('quotes', key, 1, now() + 1_000, q)).to.deep.equal({ stored: true });
        expect(await kv.putOwned('quotes', 'k', 1, now() + 1_000, q)).to.deep.equal(refused(3, now() + 1_000));
      });

      it('concurrent putOwned of one owner never takes it past the limit', async function () {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) => kv.putOwned('quotes', `k${i}`, i, now() + 1_000, quota('key_1', 5))),
        );
        expect(results.filter((r) => r.stored)).to.have.length(5);
        expect(await kv.ownedKeys('quotes', 'key_1')).to.have.length(5);
        for (const r of results)
          if (!r.stored) expect(r).to.deep.equal({ stored: false, count: 5, nextExpiresAt: now() + 1_000 });
      });

      it('a plain put over an owned record leaves it owned by nobody; ownedKeys lists the live ones, earliest expiry first', async function () {
        await kv.putOwned('exports', 'x', 1, now() + 3_000, quota('key_1', 10));
        await kv.putOwned('exports', 'y', 1, now() + 1_000, quota('key_1', 10));
        await kv.putOwned('exports', 'z', 1, now() + 2_000, quota('key_1', 10));
        await kv.putOwned('exports', 'gone', 1, now() + 500, quota('key_1', 10));
        await kv.putOwned('exports', 'w', 1, now() + 3_000, quota('key_1', 10));
        await kv.put('exports', 'z', 1, now() + 2_000);
        clock.advance(500);
        expect(await kv.ownedKeys('exports', 'key_1')).to.deep.equal([
          { key: 'y', expiresAt: now() + 500 },
          { key: 'w', expiresAt: now() + 2_500 },
          { key: 'x', expiresAt: now() + 2_500 },
        ]);
        expect(await kv.ownedKeys('exports', 'key_2')).to.deep.equal([]);
        expect(await kv.ownedKeys('quotes', 'key_1')).to.deep.equal([]);
      });
    });
  });
}
