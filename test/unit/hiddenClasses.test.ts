/**
 * The voucher's applications and the orders the command handler keeps share one V8 hidden class
 * per kind (test/support/hiddenClassProbe.ts, run in a child process with V8's natives syntax): a
 * spread copy gets a hidden class of its own, several hundred bytes for each object kept.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ROOT } from '../support/processes.ts';

describe('hidden classes of the states the command handler keeps', function () {
  this.timeout(30_000);

  it('gives every application, rolled-back application, order, order voucher and reservation the hidden class of the one before (V8)', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', 'test/support/hiddenClassProbe.ts'],
      { cwd: ROOT, timeout: 20_000 },
    );
    expect(JSON.parse(stdout.trim())).to.deep.equal({
      applied: { pairs: 19, same: 19 },
      rolledBack: { pairs: 19, same: 19 },
      orders: { pairs: 39, same: 39 },
      orderVouchers: { pairs: 39, same: 39 },
      reservations: { pairs: 39, same: 39 },
    });
  });
});
