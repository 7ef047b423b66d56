/**
 * The open-loop bench's main-thread column (scripts/bench/load.ts, mainThreadCpu): the main
 * thread's share of a core and its CPU per answered request, medians over the rounds, from the
 * per-thread CPU the bench reads under /proc; nulls where the thread's CPU is not known.
 */
import { expect } from 'chai';
import { mainThreadCpu, threadCpuPerRequest } from '../../scripts/bench/load.ts';
import { threadLine } from '../../scripts/bench/openLoopReport.ts';

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

describe('bench: every thread’s CPU per request of open-loop rounds', () => {
  it('sums each thread’s seconds over the rounds and divides by all their answers', () => {
    // main 1.2 + 3 = 4.2 s, the writer 5 + 5 = 10 s, other 14 s, over 1,000 + 2,000 answers
    const result = threadCpuPerRequest([meter(2, 1.2), meter(4, 3)], [1_000, 2_000])!;
    expect(result.main).to.be.closeTo(1_400, 1e-9);
    expect(result['sqlite-writer']).to.be.closeTo(10e6 / 3_000, 1e-9);
    expect(result.other).to.be.closeTo(14e6 / 3_000, 1e-9);
  });

  it('is null without thread figures or answers; the line lists threads largest first and leaves out the small', () => {
    expect(threadCpuPerRequest([meter(2, undefined)], [100])).to.equal(null);
    expect(threadCpuPerRequest([meter(2, 1)], [0])).to.equal(null);
    expect(threadLine({ main: 363.4, other: 4.9, 'sqlite-writer': 150.2, 'proj-sandbox': 44.6 })).to.equal(
      'main 363, sqlite-writer 150, proj-sandbox 45',
    );
  });
});
