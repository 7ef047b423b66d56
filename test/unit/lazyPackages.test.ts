/**
 * The clients of the servers, the XLSX writer (decision 064) and the webhook sender's HTTP client
 * (decision 070) are loaded only when used: a service on the embedded stores loads none of them (test/support/loadedPackagesProbe.ts, in a
 * child process of its own).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type * as Kafkajs from 'kafkajs';
import { lazyPackage } from '../../src/core/lazyPackage.ts';
import { ROOT } from '../support/processes.ts';

describe('optional packages loaded on first use', function () {
  this.timeout(60_000);

  it('a service on the embedded stores has loaded none of mongodb, @eventstore/db-client, kafkajs, exceljs and undici', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/support/loadedPackagesProbe.ts'],
      { cwd: ROOT, timeout: 50_000 },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).to.deep.equal([]);
  });

  it('gives the package `import` gives, loaded once', async () => {
    const kafkajs = lazyPackage<typeof Kafkajs>('kafkajs');
    const imported = (await import('kafkajs')).default;
    expect(kafkajs()).to.equal(imported);
    expect(kafkajs()).to.equal(kafkajs());
  });
});
