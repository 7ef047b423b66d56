/**
 * The gatherer holds the commits it is given for a window after the first and hands them on
 * together, in order, in one call (the writer thread posts each window as one message); without a
 * window, each at once; a flush hands on what it holds.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { WindowGatherer } from '../../src/infrastructure/windowGatherer.ts';
import type { CommittedEvents } from '../../src/infrastructure/eventStore/sqliteGroupCommit.ts';

const commit = (after: number): CommittedEvents => ({ after, rows: [] });
/** Each hand-on call, as the `after` of its commits. */
const recorder = () => {
  const calls: number[][] = [];
  return { calls, handOn: (commits: CommittedEvents[]) => calls.push(commits.map((c) => c.after)) };
};

describe('WindowGatherer (a window of commits handed on together)', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers();
  });
  afterEach(() => clock.restore());

  it('holds commits for the window after the first, then hands them all on in order, in one call', () => {
    const { calls, handOn } = recorder();
    const gatherer = new WindowGatherer<CommittedEvents>(25, handOn);
    gatherer.take(commit(1));
    clock.tick(10);
    gatherer.take(commit(2));
    clock.tick(14);
    expect(calls).to.deep.equal([]);
    clock.tick(1);
    expect(calls).to.deep.equal([[1, 2]]);
    // the next window starts with the next commit, not on a running timer
    gatherer.take(commit(3));
    clock.tick(24);
    expect(calls).to.deep.equal([[1, 2]]);
    clock.tick(1);
    expect(calls).to.deep.equal([[1, 2], [3]]);
    expect(clock.countTimers()).to.equal(0);
  });

  it('hands each commit on at once, alone, without a window', () => {
    const { calls, handOn } = recorder();
    const gatherer = new WindowGatherer<CommittedEvents>(0, handOn);
    gatherer.take(commit(1));
    gatherer.take(commit(2));
    expect(calls).to.deep.equal([[1], [2]]);
    expect(clock.countTimers()).to.equal(0);
  });

  it('a flush hands on what it holds at once and clears the timer; with nothing held it hands on nothing', () => {
    const { calls, handOn } = recorder();
    const gatherer = new WindowGatherer<CommittedEvents>(25, handOn);
    gatherer.flush();
    expect(calls).to.deep.equal([]);
    gatherer.take(commit(1));
    gatherer.take(commit(2));
    gatherer.flush();
    expect(calls).to.deep.equal([[1, 2]]);
    expect(clock.countTimers()).to.equal(0);
    gatherer.flush();
    clock.tick(100);
    expect(calls).to.deep.equal([[1, 2]]);
  });
});
