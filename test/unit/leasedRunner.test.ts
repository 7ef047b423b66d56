/** LeasedRunner (decision 053): what happens when the leased work cannot stop cleanly. */
import { expect } from 'chai';
import sinon from 'sinon';
import { Lease, LeasedRunner } from '../../src/core/lease.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { FakeClock } from '../support/fakeClock.ts';

describe('LeasedRunner', () => {
  it('a lease lost while the work’s stop fails (a last fenced write refused): the check resolves, logs it, and the work counts as stopped', async () => {
    const store = SqliteReadStore.open(':memory:');
    const clock = new FakeClock();
    const lease = new Lease({ store, name: 'publisher', holder: 'first', clock, ttlMs: 15_000 });
    const error = sinon.spy();
    const runner = new LeasedRunner(
      lease,
      { start: async () => ({ stop: () => Promise.reject(new Error('fenced write refused')) }) },
      { error },
    );
    try {
      await runner.start(false);
      expect(runner.active).to.equal(true);
      // another process takes the lease once it expired
      clock.advance(16_000);
      await new Lease({ store, name: 'publisher', holder: 'second', clock, ttlMs: 15_000 }).tick();
      await runner.check();
      expect(runner.active).to.equal(false);
      expect(error.calledWithMatch({ err: sinon.match.instanceOf(Error) }, 'leased work failed to stop')).to.equal(
        true,
      );
      expect(await lease.available()).to.equal(false);
    } finally {
      await runner.stop();
      await store.close();
    }
  });
});
