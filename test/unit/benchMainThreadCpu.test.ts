/**
 * The open-loop bench's main-thread column (scripts/bench/load.ts, mainThreadCpu): the main
 * thread's share of a core and its CPU per answered request, medians over the rounds, from the
 * per-thread CPU the bench reads under /proc; nulls where the thread's CPU is not known.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { statTimes, threadTimes } from '../../scripts/bench/cpu.ts';
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

  it('gives the part in the kernel from the kernel seconds alone, and the line shows it beside each thread', () => {
    const withKernel = (main: number, writerKernel: number) => ({
      ...meter(2, main),
      serverThreadKernelSeconds: { main: main / 10, 'sqlite-writer': writerKernel, other: 0 },
    });
    // the writer: 2 + 3 = 5 kernel seconds over 1,000 + 1,500 answers = 2,000 µs per answer
    const kernel = threadCpuPerRequest([withKernel(1, 2), withKernel(2, 3)], [1_000, 1_500], 'kernel')!;
    expect(kernel['sqlite-writer']).to.be.closeTo(2_000, 1e-9);
    expect(kernel.main).to.be.closeTo(300e3 / 2_500, 1e-9);
    // a meter without kernel figures counts for nothing
    expect(threadCpuPerRequest([meter(2, 1)], [100], 'kernel')).to.equal(null);
    expect(
      threadLine({ main: 211.2, 'sqlite-writer': 155.4, other: 3 }, { main: 24.6, 'sqlite-writer': 70.1 }),
    ).to.equal('main 211 (kernel 25), sqlite-writer 155 (kernel 70)');
  });
});

describe('bench: user and kernel time under /proc', () => {
  it('reads utime and stime of a stat line whose command name holds spaces and parentheses', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stat-'));
    try {
      const file = path.join(dir, 'stat');
      // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
      fs.writeFileSync(file, '4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 3 0\n');
      expect(statTimes(file)).to.deep.equal({ user: 12.34, kernel: 5.67 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sums this process’s threads by name, the kernel part never above the whole', function () {
    if (process.platform !== 'linux') this.skip();
    const times = threadTimes(process.pid)!;
    const main = times.get('main')!;
    expect(main.cpu).to.be.greaterThan(0);
    expect(main.kernel).to.be.within(0, main.cpu);
    expect(threadTimes(undefined)).to.equal(null);
  });
});
