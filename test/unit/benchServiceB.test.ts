/**
 * The open-loop bench's service B (scripts/bench/cli.ts, processes.ts): `--b-env`'s pairs, which
 * may not set DATA_DIR, and the fresh data directory each service gets under the directory it is
 * told (`--b-data-under` for B), removed at the end of the run unless kept.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parseBEnv } from '../../scripts/bench/cli.ts';
import { freshTempDir, removeTempDirs } from '../../scripts/bench/processes.ts';
import { tempFileEach } from '../support/tempFiles.ts';

describe('bench: service B', () => {
  it("parses --b-env's pairs, a value keeping its own '='", () => {
    expect(parseBEnv('SNAPSHOT_GATHER_MS=0,NODE_OPTIONS=--max-semi-space-size=32')).to.deep.equal({
      SNAPSHOT_GATHER_MS: '0',
      NODE_OPTIONS: '--max-semi-space-size=32',
    });
  });

  it('refuses a pair without a name', () => {
    expect(() => parseBEnv('A=1,=2')).to.throw('--b-env takes NAME=value pairs separated by commas, got "=2"');
  });

  it('refuses DATA_DIR, naming --b-data-under', () => {
    expect(() => parseBEnv('A=1,DATA_DIR=/dev/shm/b')).to.throw('use --b-data-under=<dir>');
  });

  describe('a data directory under the one given', () => {
    const under = tempFileEach('bench-service-b-', 'under');
    beforeEach(() => fs.mkdirSync(under()));

    it("is new in every call and removed with the run's other temporary directories", () => {
      const first = freshTempDir('voucher-bench-', { under: under() });
      const second = freshTempDir('voucher-bench-', { under: under() });
      expect(path.dirname(first)).to.equal(under());
      expect(path.basename(first)).to.match(/^voucher-bench-\w{6}$/);
      expect(second).to.not.equal(first);
      expect(fs.statSync(first).isDirectory()).to.equal(true);
      removeTempDirs();
      expect(fs.existsSync(first)).to.equal(false);
      expect(fs.existsSync(second)).to.equal(false);
    });

    it('stays when kept', () => {
      const kept = freshTempDir('voucher-bench-', { under: under(), keep: true });
      removeTempDirs();
      expect(fs.existsSync(kept)).to.equal(true);
    });
  });
});
