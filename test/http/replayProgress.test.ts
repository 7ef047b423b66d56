/**
 * `npm run replay` on a terminal draws a progress bar per environment and projection group. The
 * script only draws it when stdout is a TTY, so it runs here under `script(1)` (util-linux), which
 * gives it a pseudo-terminal; the non-TTY summary lines are checked by durability.test.ts.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
// Colours, cursor moves and line clears of the terminal output.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

describe('npm run replay on a terminal', function () {
  this.timeout(120_000);
  let dataDir: string;

  before(async () => {
    const service = await TestService.start();
    dataDir = service.dataDir;
    for (let i = 0; i < 3; i += 1) await service.createVoucher(fixedVoucher(`BAR${i}`));
    await service.stop(true);
  });
  after(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('draws a progress bar that reaches 100% for each environment and projection group', async () => {
    const command = `${JSON.stringify(process.execPath)} --import tsx scripts/replay.ts`;
    const { stdout } = await promisify(execFile)('script', ['-qec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, COLUMNS: '160' },
      timeout: 90_000,
      maxBuffer: 10 * 1024 * 1024,
    });
    const screen = stdout.replace(ANSI, '');
    for (const environment of ['sandbox', 'production']) {
      for (const group of ['core', 'analytics']) {
        expect(screen, screen).to.match(
          new RegExp(`${environment}\\s+${group} \\[[\\u2588\\u2591]{10,}\\] 100% \\| position (\\d+)/\\1`),
        );
      }
    }
    // On a terminal the bar replaces the per-group summary lines.
    expect(screen).to.not.include('events folded in');
  });
});
