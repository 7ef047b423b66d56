/**
 * The durable ceiling's group commit (scripts/bench/groupCommit.ts): every body is in the file
 * before its commit resolves, bodies that arrive during a sync share the next one, and a failed
 * write or sync resolves false instead of answering as if it were durable.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { groupCommit } from '../../scripts/bench/groupCommit.ts';

describe('bench: the durable ceiling’s group commit', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-group-commit-'));
  });
  afterEach(() => {
    sinon.restore();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes and syncs every body before its commit resolves, many bodies per sync', async () => {
    const fsync = sinon.spy(fs, 'fsync');
    const file = path.join(dir, 'log');
    const commit = groupCommit(file);
    const bodies = Array.from({ length: 40 }, (_, i) => `{"n":${i}}`);
    const seen: string[] = [];
    const results = await Promise.all(
      bodies.map((b) =>
        commit(Buffer.from(b)).then((ok) => {
          seen.push(fs.readFileSync(file, 'utf8'));
          return ok;
        }),
      ),
    );
    expect(results.every((ok) => ok)).to.equal(true);
    const content = fs.readFileSync(file, 'utf8');
    for (const b of bodies) expect(content).to.include(b);
    // the first commit is synced alone; the 39 that arrived meanwhile share the next sync
    expect(fsync.callCount).to.equal(2);
    expect(seen[0]).to.include(bodies[0]);
  });

  it('goes back to the start of the file once it would pass its size', async () => {
    const file = path.join(dir, 'log');
    const commit = groupCommit(file, 16);
    expect(await commit(Buffer.from('aaaaaaaaaa'))).to.equal(true);
    expect(await commit(Buffer.from('bbbbbbbbbb'))).to.equal(true);
    expect(fs.readFileSync(file, 'utf8')).to.equal('bbbbbbbbbb');
  });

  it('resolves false when the sync fails, and commits again afterwards', async () => {
    const file = path.join(dir, 'log');
    const commit = groupCommit(file);
    const fsync = sinon
      .stub(fs, 'fsync')
      .callsFake(((_fd: number, done: (e: Error | null) => void) => done(new Error('EIO'))) as typeof fs.fsync);
    expect(await commit(Buffer.from('x'))).to.equal(false);
    fsync.restore();
    expect(await commit(Buffer.from('y'))).to.equal(true);
  });
});
