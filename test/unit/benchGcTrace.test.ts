/**
 * The open-loop bench's GC trace (scripts/bench/gcTrace.ts, `--gc-trace`): V8's
 * `--trace-gc-nvp --trace-gc-verbose` lines, read in chunks that split lines, sorted by isolate,
 * the main thread's isolate picked, and each target's collections summed over its rounds' windows.
 */
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { GC_TRACE_FLAGS, GcTraceReader, summarizeGc } from '../../scripts/bench/gcTrace.ts';

const MAIN = '0x45438e60';
const WORKER = '0x7fce0c001200';

/** A collection as the two flags print it (fields trimmed to those read, plus some that are not). */
const collection = (isolate: string, atMs: number, kind: string, pauseMs: number, promoted: number, oldKb: number) =>
  [
    `[15841:${isolate}]    ${atMs} ms: pause=${pauseMs} mutator=274.6 gc=${kind} reduce_memory=0 scavenge=1.50 ` +
      `allocated=13311600 promoted=${promoted} new_space_survived=644536 promotion_rate=90.8%`,
    `[15841:${isolate}] Memory allocator,       used:  91868 KB, available: 4151588 KB`,
    `[15841:${isolate}] New space,              used:    727 KB, available:  15380 KB, committed:  32768 KB`,
    `[15841:${isolate}] Old space,              used:  ${oldKb} KB, available:  14793 KB, committed:  53984 KB`,
    `[15841:${isolate}] Code space,             used:   2937 KB, available:    181 KB, committed:   3328 KB`,
  ].join('\n');

const trace = [
  '{"level":40,"msg":"a log line of the service"}',
  collection(MAIN, 1000, 's', 3, 100 * 1024, 30_000),
  collection(WORKER, 1005, 's', 1, 8 * 1024, 2_000),
  collection(MAIN, 1250, 's', 4, 200 * 1024, 30_400), // +400 kB: 200 promoted, 200 direct
  collection(MAIN, 1500, 'mc', 20, 0, 26_000),
  collection(MAIN, 1750, 's', 5, 300 * 1024, 25_000), // after a full collection: no direct figure
  collection(MAIN, 2000, 's', 6, 100 * 1024, 25_300), // +300 kB: 100 promoted, 200 direct
  collection(MAIN, 9000, 's', 2, 900 * 1024, 40_000), // outside the windows
].join('\n');

/** The trace written to a stream in chunks of `chunk` characters, as a child's stdout arrives. */
const read = async (text: string, chunk: number) => {
  const reader = new GcTraceReader();
  const stdout = new PassThrough();
  const done = reader.follow(stdout);
  for (let i = 0; i < text.length; i += chunk) stdout.write(text.slice(i, i + chunk));
  stdout.end('\n');
  await done;
  return reader;
};

describe('bench: the GC trace of the service', () => {
  it('reads each isolate apart, whatever the chunks, and takes the largest old space as the main thread', async () => {
    for (const chunk of [7, 61, trace.length]) {
      const main = (await read(trace, chunk)).main();
      expect(main.map((e) => [e.kind, e.atMs, e.pauseMs])).to.deep.equal([
        ['s', 1000, 3],
        ['s', 1250, 4],
        ['mc', 1500, 20],
        ['s', 1750, 5],
        ['s', 2000, 6],
        ['s', 9000, 2],
      ]);
      expect(main[1]!.promoted).to.equal(200 * 1024);
      expect(main[1]!.oldUsed).to.equal(30_400 * 1024);
      expect(main[2]!.promoted).to.equal(0); // a full collection promotes nothing by this count
    }
  });

  it('sums the collections inside the windows: promoted and direct old-generation bytes per request, full collections', async () => {
    const main = (await read(trace, 50)).main();
    const summary = summarizeGc(main, [
      { fromMs: 900, toMs: 1600, requests: 100 },
      { fromMs: 1700, toMs: 2100, requests: 100 },
    ]);
    expect(summary.requests).to.equal(200);
    expect(summary.seconds).to.be.closeTo(1.1, 1e-9);
    expect(summary.scavenges).to.equal(4);
    expect(summary.scavengePauseMeanMs).to.be.closeTo(4.5, 1e-9);
    expect(summary.promotedPerRequest).to.equal((700 * 1024) / 200);
    // two scavenges measured (200 kB each beyond what they promoted), scaled to the four
    expect(summary.directOldPerRequest).to.equal((400 * 1024 * 2) / 200);
    expect(summary.fullCollections).to.equal(1);
    expect(summary.fullPausesMs).to.deep.equal([20]);
  });

  it('gives no direct figure without old-space sizes (the nvp trace alone)', async () => {
    const nvpOnly = trace
      .split('\n')
      .filter((line) => !line.includes(' space,') && !line.includes('allocator'))
      .join('\n');
    const summary = summarizeGc((await read(nvpOnly, 1000)).main(), [{ fromMs: 0, toMs: 3000, requests: 10 }]);
    expect(summary.directOldPerRequest).to.equal(null);
    expect(summary.scavenges).to.equal(4);
  });

  it('places the trace’s clock on its own from the anchor: the scavenge printed before it, at a monotonic time', async () => {
    const anchorNs = 5_000_000_000n;
    const anchored = [collection(MAIN, 26, 's', 0.5, 0, 1_000), `GC_ANCHOR ${anchorNs}`, trace].join('\n');
    const reader = await read(anchored, 40);
    // 100 ms after the anchor on the monotonic clock, performance.now() read 10,000: the anchor's
    // scavenge (26 ms on the trace's clock) was at 9,900, so the trace's clock read 0 at 9,874
    expect(reader.isolateStartedAt(10_000, anchorNs + 100_000_000n)).to.be.closeTo(9_874, 1e-9);
    expect(reader.main()[0]!.atMs).to.equal(26); // the anchor's scavenge is a collection like the others
    expect((await read(trace, 40)).isolateStartedAt()).to.equal(undefined); // no anchor read
  });

  it('anchors the trace of a real node process started with the bench’s flags', async function () {
    this.timeout(20_000);
    const spawnedAt = performance.now();
    const child = spawn(process.execPath, [...GC_TRACE_FLAGS, '-e', 'setTimeout(() => {}, 50)'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const reader = new GcTraceReader();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await reader.follow(child.stdout);
    await exited;
    const origin = reader.isolateStartedAt();
    expect(origin).to.be.a('number');
    // the isolate starts after the spawn, and within the few seconds the process lived
    expect(origin!).to.be.within(spawnedAt, performance.now());
    expect(reader.main().filter((e) => e.kind === 's')).to.have.length.of.at.least(1);
  });
});
