/**
 * Contract of an express-rate-limit store, written from the semantics of the package's own
 * MemoryStore (a fixed window per key, starting at the key's first hit), which runs it too:
 * a shared store must count as the in-process one does. Date is faked (sinon, Date only, set
 * far in the future so that a server's own expiry on its real clock never runs first); timers
 * stay real.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import type { Options, Store } from 'express-rate-limit';

export type RateLimitStoreFactory = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

const WINDOW_MS = 60_000;
const START = Date.parse('2100-01-01T00:00:00Z');

export function rateLimitStoreContract(name: string, factory: RateLimitStoreFactory): void {
  describe(`rate-limit store contract: ${name}`, function () {
    let clock: sinon.SinonFakeTimers;
    let store: Store;
    let cleanup: () => Promise<void>;
    let n = 0;
    let key: string;

    beforeEach(async function () {
      clock = sinon.useFakeTimers({ now: START, toFake: ['Date'] });
      ({ store, cleanup } = await factory());
      await store.init?.({ windowMs: WINDOW_MS } as Options);
      key = `key_${process.pid}_${Date.now()}_${(n += 1)}`;
    });
    afterEach(async function () {
      await cleanup?.();
      clock.restore();
    });

    const reset = (at: number) => new Date(at + WINDOW_MS);
    const info = async (k = key) => {
      const got = await store.get!(k);
      return got && { totalHits: got.totalHits, resetTime: got.resetTime?.getTime() };
    };

    it('counts hits from 1 in a window that starts at the first hit', async function () {
      expect(await store.increment(key)).to.deep.equal({ totalHits: 1, resetTime: reset(START) });
      clock.tick(1_000);
      expect(await store.increment(key)).to.deep.equal({ totalHits: 2, resetTime: reset(START) });
      clock.tick(WINDOW_MS - 1_001);
      expect(await store.increment(key)).to.deep.equal({ totalHits: 3, resetTime: reset(START) });
      expect(await info()).to.deep.equal({ totalHits: 3, resetTime: START + WINDOW_MS });
    });

    it('starts a new window with the first hit at or after the reset time', async function () {
      await store.increment(key);
      await store.increment(key);
      clock.tick(WINDOW_MS);
      expect(await info()).to.equal(undefined);
      expect(await store.increment(key)).to.deep.equal({ totalHits: 1, resetTime: reset(START + WINDOW_MS) });
      clock.tick(WINDOW_MS * 3 + 17);
      expect(await store.increment(key)).to.deep.equal({
        totalHits: 1,
        resetTime: reset(START + WINDOW_MS * 4 + 17),
      });
    });

    it('get: nothing for a key never seen', async function () {
      expect(await info(`${key}_unseen`)).to.equal(undefined);
    });

    it('keys count apart', async function () {
      await store.increment(key);
      await store.increment(key);
      clock.tick(10);
      expect(await store.increment(`${key}_b`)).to.deep.equal({ totalHits: 1, resetTime: reset(START + 10) });
      expect(await info()).to.deep.equal({ totalHits: 2, resetTime: START + WINDOW_MS });
    });

    it('decrement takes one hit back, never below 0, and keeps the window', async function () {
      await store.increment(key);
      await store.increment(key);
      await store.decrement(key);
      expect(await info()).to.deep.equal({ totalHits: 1, resetTime: START + WINDOW_MS });
      await store.decrement(key);
      await store.decrement(key);
      expect(await info()).to.deep.equal({ totalHits: 0, resetTime: START + WINDOW_MS });
      expect(await store.increment(key)).to.deep.equal({ totalHits: 1, resetTime: reset(START) });
    });

    it('decrement of a key never seen opens an empty window', async function () {
      await store.decrement(key);
      expect(await info()).to.deep.equal({ totalHits: 0, resetTime: START + WINDOW_MS });
      clock.tick(5);
      expect(await store.increment(key)).to.deep.equal({ totalHits: 1, resetTime: reset(START) });
    });

    it('decrement after the window is over does not bring the old window back', async function () {
      await store.increment(key);
      clock.tick(WINDOW_MS);
      await store.decrement(key);
      expect(await info()).to.equal(undefined);
      expect(await store.increment(key)).to.deep.equal({ totalHits: 1, resetTime: reset(START + WINDOW_MS) });
    });

    it('resetKey forgets the key; the next hit opens a new window', async function () {
      await store.increment(key);
      await store.increment(key);
      clock.tick(100);
      await store.resetKey(key);
      expect(await info()).to.equal(undefined);
      expect(await store.increment(key)).to.deep.equal({ totalHits: 1, resetTime: reset(START + 100) });
      await store.resetKey(`${key}_unseen`);
    });

    it('resetAll forgets every key of the store', async function () {
      await store.increment(key);
      await store.increment(`${key}_b`);
      await store.resetAll!();
      expect(await info()).to.equal(undefined);
      expect(await info(`${key}_b`)).to.equal(undefined);
    });

    it('concurrent hits of one key are all counted', async function () {
      const results = await Promise.all(Array.from({ length: 20 }, () => store.increment(key)));
      expect(Math.max(...results.map((r) => r.totalHits))).to.equal(20);
      expect(await info()).to.deep.equal({ totalHits: 20, resetTime: START + WINDOW_MS });
    });
  });
}
