import { expect } from 'chai';
import { voucherDecider } from '../../src/domain/voucher/decide.ts';
import type { VoucherEvent, VoucherStreamEvent } from '../../src/domain/voucher/events.ts';
import { applicationOf, evolveCore, usageDelta, type VoucherState } from '../../src/domain/voucher/state.ts';
import { voucherSnapshots } from '../../src/domain/voucher/snapshot.ts';
import {
  voucherApplicationRolledBack,
  voucherApplied,
  voucherCreated,
  voucherDeactivated,
  voucherExpired,
  voucherUpdated,
} from '../fixtures/events.ts';

const { evolve, initialState } = voucherDecider;

const created = voucherCreated();
const applied = (n: number, customerId = 'c_1'): VoucherEvent =>
  voucherApplied({ applicationId: `app_${n}`, orderId: `o_${n}`, customerId, orderFingerprint: `of_${n}` });
const rolledBack = (n: number, customerId = 'c_1'): VoucherEvent =>
  voucherApplicationRolledBack({ applicationId: `app_${n}`, orderId: `o_${n}`, customerId });

/** Everything a state holds, as plain data (its maps as entry lists). */
const snapshot = (state: VoucherState) =>
  state && {
    ...state,
    applications: [...state.applications],
    liveByOrder: [...state.liveByOrder],
    customerUses: [...state.customerUses],
  };

describe('voucher state: evolve is pure', () => {
  it('leaves a folded state as it was when it is folded again (apply, then rollback)', () => {
    const base = [created, applied(1)].reduce(evolve, initialState());
    const before = snapshot(base);

    const afterApply = evolve(base, applied(2));
    expect(snapshot(base)).to.deep.equal(before);
    const afterRollback = evolve(base, rolledBack(1));
    expect(snapshot(base)).to.deep.equal(before);

    // Both successors were built from the same, unchanged state.
    expect(afterApply!.usageCount).to.equal(2);
    expect([...afterApply!.customerUses]).to.deep.equal([['c_1', 2]]);
    expect(afterRollback!.usageCount).to.equal(0);
    expect([...afterRollback!.liveByOrder]).to.deep.equal([]);
    expect(afterRollback!.applications.get('app_1')!.status).to.equal('rolled_back');
    expect(base!.applications.get('app_1')!.status).to.equal('applied');
  });

  it('gives the same state whether a prefix of the stream is reused or folded afresh', () => {
    const events = [created, applied(1), applied(2, 'c_2'), rolledBack(1), applied(3)];
    const prefix = events.slice(0, 3).reduce(evolve, initialState());
    const branch = evolve(prefix, applied(9, 'c_9')); // a fold that must not leak into `prefix`
    const resumed = events.slice(3).reduce(evolve, prefix);
    const fresh = events.reduce(evolve, initialState());
    expect(snapshot(resumed)).to.deep.equal(snapshot(fresh));
    expect(branch!.applications.has('app_3')).to.equal(false);
    expect(resumed!.applications.has('app_9')).to.equal(false);
  });
});

describe('voucher state: the core-only fold (evolveCore) and applicationOf', () => {
  const history = [created, applied(1), applied(2, 'c_2'), rolledBack(1), applied(3)];

  it('gives the core evolve gives, with no application kept', () => {
    const whole = history.reduce(evolve, initialState());
    const core = history.reduce(evolveCore, initialState());
    expect(whole!.applications.size).to.equal(3);
    expect(voucherSnapshots.core(core)).to.deep.equal(voucherSnapshots.core(whole));
    expect(core!.usageCount).to.equal(2);
    expect([core!.applications.size, core!.liveByOrder.size, core!.customerUses.size]).to.deep.equal([0, 0, 0]);
  });

  it('reads the application an event records as the whole fold holds it after that event', () => {
    let whole = initialState();
    for (const event of history) {
      whole = evolve(whole, event);
      if (event.type !== 'VoucherApplied' && event.type !== 'VoucherApplicationRolledBack') continue;
      const held = whole!.applications.get(event.data.applicationId)!;
      const read = applicationOf(event, whole!);
      if (event.type === 'VoucherApplied') expect(read).to.deep.equal(held);
      else
        expect({ ...read, orderFingerprint: undefined, customerFingerprint: undefined }).to.deep.equal({
          ...held,
          orderFingerprint: undefined,
          customerFingerprint: undefined,
        });
    }
  });

  it('changes only the usage count, by usageDelta, for each event usageDelta answers; null for any other', () => {
    const events: VoucherStreamEvent[] = [
      ...history,
      {
        type: 'VoucherReservationVoided',
        data: {
          voucherId: created.data.voucherId,
          applicationId: 'app_3',
          orderId: 'o_3',
          voidedAt: '2026-01-05T00:00:00Z',
        },
      },
      voucherUpdated({ status: 'inactive' }),
      voucherDeactivated(),
      voucherExpired(),
    ];
    let core = evolveCore(initialState(), created);
    for (const event of events.slice(1)) {
      const next = evolveCore(core, event);
      const delta = usageDelta(event);
      if (delta === null) expect(['VoucherUpdated', 'VoucherDeactivated', 'VoucherExpired']).to.include(event.type);
      else
        expect(voucherSnapshots.core(next)).to.deep.equal(
          voucherSnapshots.core({ ...core!, usageCount: core!.usageCount + delta }),
        );
      core = next;
    }
  });
});
