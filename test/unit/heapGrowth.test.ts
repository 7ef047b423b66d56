import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import sinon from 'sinon';
import { limitHeapGrowth } from '../../src/infrastructure/heapGrowth.ts';

describe('limitHeapGrowth', () => {
  it("sets V8's heap growing percent, and leaves V8's heuristic alone at 0", () => {
    const setFlags = sinon.spy();
    limitHeapGrowth(30, setFlags);
    limitHeapGrowth(0, setFlags);
    expect(setFlags.args).to.deep.equal([['--heap-growing-percent=30']]);
  });

  it("names a flag this Node's V8 has (V8 ignores an unknown one without a word)", () => {
    const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    expect(options).to.match(/^\s*--heap-growing-percent \(/m);
  });
});
