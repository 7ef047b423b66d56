/**
 * The open-loop bench's main-thread column (scripts/bench/load.ts, mainThreadCpu): the main
 * thread's share of a core and its CPU per answered request, medians over the rounds, from the
 * per-thread CPU the bench reads under /proc; nulls where the thread's CPU is not known.
 */
import { expect } from 'chai';
import { mainThreadCpu } from '../../scripts/bench/load.ts';

const meter = (seconds: number, main: number | undefined) => ({
  window: { fromUs: 1_000_000, toUs: 1_000_000 + seconds * 1e6 },
  serverThreadCpuSeconds: main === undefined ? null : { main, 'sqlite-writer': 5, other: 7 },
});

describe('bench: the main thread CPU of open-loop rounds', () => {
  it('takes the main thread only, over each round’s own wall time, and the median of the rounds', () => {
    // 3 rounds: 0.6 of a core over 2 s for 1,000 answers, 0.75 over 4 s for 2,000, 0.9 over 2 s for 900.
    const result = mainThreadCpu([meter(2, 1.2), meter(4, 3), meter(2, 1.8)], [1_000, 2_000, 900]);
    expect(result.mainCpu).to.be.closeTo(0.75, 1e-9);
    expect(result.mainCpuUsPerRequest).to.be.closeTo(1_500, 1e-9); // 1,200, 1,500 and 2,000 µs
  });

  it('skips a round without answers for the per-request figure, and gives nulls without thread figures', () => {
    const result = mainThreadCpu([meter(2, 1), meter(2, 2)], [0, 4_000]);
    expect(result.mainCpu).to.be.closeTo(0.75, 1e-9); // median of 0.5 and 1.0
    expect(result.mainCpuUsPerRequest).to.be.closeTo(500, 1e-9);
    expect(mainThreadCpu([meter(2, undefined)], [100])).to.deep.equal({ mainCpu: null, mainCpuUsPerRequest: null });
  });
});
