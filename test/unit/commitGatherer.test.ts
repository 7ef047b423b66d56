/**
 * The projector thread's gatherer holds the commits it is handed for a window after the first and
 * hands them on together, in order; without a window, at once; a flush hands on what it holds.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { CommitGatherer } from '../../src/infrastructure/projector/commitGatherer.ts';
import type { CommittedEvents } from '../../src/infrastructure/eventStore/sqliteGroupCommit.ts';

const commit = (after: number): CommittedEvents => ({ after, rows: [] });

describe('CommitGatherer (the projector thread folds a window of commits together)', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers();
  });
  afterEach(() => clock.restore());

  it('holds commits for the window after the first, then hands them all on in order', () => {
    const handed: number[] = [];
    const gatherer = new CommitGatherer(25, (c) => handed.push(c.after));
    gatherer.take(commit(1));
    clock.tick(10);
    gatherer.take(commit(2));
    clock.tick(14);
    expect(handed).to.deep.equal([]);
    clock.tick(1);
    expect(handed).to.deep.equal([1, 2]);
    // the next window starts with the next commit, not on a running timer
    gatherer.take(commit(3));
    clock.tick(24);
    expect(handed).to.deep.equal([1, 2]);
    clock.tick(1);
    expect(handed).to.deep.equal([1, 2, 3]);
    expect(clock.countTimers()).to.equal(0);
  });

  it('hands each commit on at once without a window', () => {
    const handed: number[] = [];
    const gatherer = new CommitGatherer(0, (c) => handed.push(c.after));
    gatherer.take(commit(1));
    gatherer.take(commit(2));
    expect(handed).to.deep.equal([1, 2]);
    expect(clock.countTimers()).to.equal(0);
  });

  it('a flush hands on what it holds at once and clears the timer', () => {
    const handed: number[] = [];
    const gatherer = new CommitGatherer(25, (c) => handed.push(c.after));
    gatherer.take(commit(1));
    gatherer.take(commit(2));
    gatherer.flush();
    expect(handed).to.deep.equal([1, 2]);
    expect(clock.countTimers()).to.equal(0);
    gatherer.flush();
    expect(handed).to.deep.equal([1, 2]);
  });
});
