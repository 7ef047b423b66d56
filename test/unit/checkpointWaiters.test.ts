import { expect } from 'chai';
import { CheckpointWaiters } from '../../src/core/checkpointWaiters.ts';

describe('CheckpointWaiters', () => {
  it('answers each waiter once: true when its position is reached, false when its time is up or all are released', async () => {
    const waiters = new CheckpointWaiters();
    const answers: Array<[string, boolean]> = [];
    const track = (name: string, p: Promise<boolean>) =>
      p.then((ok) => {
        answers.push([name, ok]);
      });
    const done = Promise.all([
      track('at 5', waiters.wait(5, 10_000)),
      track('at 9', waiters.wait(9, 10_000)),
      track('at 20, soon out of time', waiters.wait(20, 30)),
      track('at 50', waiters.wait(50, 10_000)),
    ]);
    waiters.reached(7);
    await new Promise((resolve) => setTimeout(resolve, 60));
    waiters.reached(9);
    waiters.reached(9); // nothing left at 9: no second answer
    waiters.releaseAll();
    await done;
    expect(answers).to.deep.equal([
      ['at 5', true],
      ['at 20, soon out of time', false],
      ['at 9', true],
      ['at 50', false],
    ]);
  });
});
