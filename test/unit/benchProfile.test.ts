/**
 * The bench's CPU-profile summary (scripts/bench/profile.ts) finds the main thread's stalls: busy
 * stretches between idle samples, and the longest runs of samples on one stack (most likely one
 * blocking call), each named by the sampled function and the innermost project function above it.
 * A synthetic profile, 1 ms per sample.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import sinon from 'sinon';
import { sourceMappers, summariseProfile, type ProfileNode } from '../../scripts/bench/profile.ts';
import { tempFileEach } from '../support/tempFiles.ts';

const ROOT = '/proj';
const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber: 0, columnNumber: 0 },
  children,
});
const profile = (samples: number[]) => ({
  nodes: [
    frame(1, '(root)', '', [2, 3, 5, 6]),
    frame(2, '(idle)', ''),
    frame(3, 'flush', `file://${ROOT}/src/groupCommit.js`, [4]),
    frame(4, 'sqliteTransaction', `file://${ROOT}/node_modules/better-sqlite3/lib/transaction.js`),
    frame(5, '(garbage collector)', ''),
    frame(6, 'parse', `file://${ROOT}/src/body.js`),
  ],
  startTime: 0,
  endTime: samples.length * 1_000,
  samples,
  timeDeltas: samples.map(() => 1_000),
});
const run = (id: number, n: number) => Array.from({ length: n }, () => id);

describe('bench CPU-profile stalls', () => {
  it('finds busy stretches of 5 ms or more and the longest runs on one stack, named with their project caller', () => {
    const samples = [
      ...run(2, 3),
      ...run(4, 30), // a 30 ms commit
      ...run(2, 2),
      ...run(6, 2), // 2 ms of parsing: a stretch too short to count
      ...run(2, 1),
      ...run(5, 10), // a 10 ms collection, then 3 ms of flush: one 13 ms stretch
      ...run(3, 3),
      ...run(2, 4),
    ];
    const summary = summariseProfile(profile(samples), ROOT, undefined, 100);
    expect(summary.busyMs).to.equal(45);
    expect(summary.stretches).to.deep.include({ minMs: 5, count: 2, totalMs: 43, longestMs: [30, 13] });
    expect(summary.stretches.causes).to.deep.equal([
      { fn: 'sqliteTransaction better-sqlite3:1 ← flush src/groupCommit.js:1', ms: 30, pct: 69.8 },
      { fn: '(garbage collector) (native/vm):1', ms: 10, pct: 23.3 },
      { fn: 'flush src/groupCommit.js:1', ms: 3, pct: 7 },
    ]);
    expect(summary.stretches.longestCalls.slice(0, 4)).to.deep.equal([
      { fn: 'sqliteTransaction better-sqlite3:1 ← flush src/groupCommit.js:1', ms: 30 },
      { fn: '(garbage collector) (native/vm):1', ms: 10 },
      { fn: 'flush src/groupCommit.js:1', ms: 3 },
      { fn: 'parse src/body.js:1', ms: 2 },
    ]);
  });

  it('counts only the samples inside the window', () => {
    const samples = [...run(4, 30), ...run(2, 5), ...run(5, 10)];
    // samples are at 1, 2, ..., 45 ms: the window holds the idle ones and the collection
    const summary = summariseProfile(profile(samples), ROOT, { fromUs: 31_000, toUs: 45_000 }, 10);
    expect(summary.stretches.longestCalls).to.deep.equal([{ fn: '(garbage collector) (native/vm):1', ms: 10 }]);
    expect(summary.stretches.count).to.equal(1);
  });
});

describe('bench CPU-profile: lines of TypeScript frames from tsx’s cache', () => {
  const node = (id: number, url: string, lineNumber: number, functionName = 'named'): ProfileNode => ({
    id,
    callFrame: { functionName, url, lineNumber, columnNumber: 9 },
  });
  /** A cache entry as tsx writes it: the compiled code and its source map, which names the source last. */
  const entry = (source: string, code: string, mappings: string) =>
    JSON.stringify({ code, map: { version: 3, mappings, sources: [source] } });
  const entryA = tempFileEach('tsx-cache-', 'a');
  const dir = () => path.dirname(entryA());
  afterEach(() => sinon.restore());

  it('maps a compiled line to its source line, reading whole only the entries of the files profiled', () => {
    // generated line 0 ← source line 0, generated line 1 ← source line 2 ('E' is +2)
    fs.writeFileSync(entryA(), entry('/proj/src/a.ts', 'x;\nfunction named() {}\n', 'AAAA;AAEA'));
    fs.writeFileSync(path.join(dir(), 'b'), entry('/proj/src/other.ts', `${'y;\n'.repeat(3_000)}`, 'AAAA'));
    const read = sinon.spy(fs, 'readFileSync');
    const mappers = sourceMappers([node(1, 'file:///proj/src/a.ts', 1)], dir());
    expect(read.getCalls().map((c) => path.basename(String(c.args[0])))).to.deep.equal(['a']);
    expect([...mappers.keys()]).to.deep.equal(['/proj/src/a.ts']);
    expect(mappers.get('/proj/src/a.ts')!(1, 9)).to.equal(2);
    expect(mappers.get('/proj/src/a.ts')!(0, 0)).to.equal(0);
  });

  it('reads nothing of the cache for a profile without TypeScript frames', () => {
    fs.writeFileSync(entryA(), entry('/proj/src/a.ts', 'x;\n', 'AAAA'));
    const listed = sinon.spy(fs, 'readdirSync');
    expect(sourceMappers([node(1, 'file:///proj/dist/a.js', 1)], dir()).size).to.equal(0);
    expect(listed.called).to.equal(false);
  });
});
