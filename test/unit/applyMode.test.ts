import { expect } from 'chai';
import { applyModeFor } from '../../src/composition.ts';
import type { EventStore } from '../../src/core/eventStore.ts';
import type { EnvironmentEvent } from '../../src/application/events.ts';

/** A store that says only whether it appends to several streams atomically. */
const store = (atomicMultiStream?: boolean) => ({ atomicMultiStream }) as unknown as EventStore<EnvironmentEvent>;

describe('applyModeFor: the apply mode a store gets', () => {
  it('atomic where the store appends to several streams atomically (or does not say), else two-append', () => {
    expect(applyModeFor(store())).to.equal('atomic');
    expect(applyModeFor(store(true))).to.equal('atomic');
    expect(applyModeFor(store(false))).to.equal('two-append');
  });

  it('the mode asked for; atomic on a store without an atomic multi-stream append stops the start', () => {
    expect(applyModeFor(store(), 'two-append')).to.equal('two-append');
    expect(applyModeFor(store(false), 'two-append')).to.equal('two-append');
    expect(() => applyModeFor(store(false), 'atomic')).to.throw(/APPLY_MODE=atomic needs an event store/);
  });
});
