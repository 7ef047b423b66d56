/**
 * The newcomer's first `npm start`: with no key configured, the service creates one sandbox and
 * one production key, prints them once (to the terminal, never to the log), stores only hashes,
 * and on the next start prints no key at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { hashKey } from '../../src/application/apiKeys.ts';
import net from 'node:net';
import {
  buildOnce,
  COMPILED_MAIN,
  exitWithin,
  freePort,
  killAll,
  run,
  startService,
  type RunningService,
} from '../support/processes.ts';

const KEY = /sk_(test|live)_[A-Za-z0-9]{32}/g;

describe('first start (real process)', () => {
  let dataDir: string;
  let first: RunningService | undefined;

  before(function () {
    this.timeout(120_000); // a fresh clone compiles the whole tree (dist/)
    buildOnce();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'first-start-'));
  });
  after(async () => {
    await killAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const listWith = (service: RunningService, key: string) =>
    fetch(`${service.base}/v1/vouchers`, {
      headers: { Authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(5_000),
    });

  it('prints one sandbox and one production key that work, and stores only their hashes', async () => {
    first = await startService({ DATA_DIR: dataDir, VOUCHER_API_KEYS: '', LOG_LEVEL: 'info' }, COMPILED_MAIN);
    const deadline = Date.now() + 5_000;
    while (!first.proc.stdout().includes('production  sk_live_') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const printed = [...new Set(first.proc.stdout().match(KEY) ?? [])];
    const sandbox = printed.filter((k) => k.startsWith('sk_test_'));
    const production = printed.filter((k) => k.startsWith('sk_live_'));
    expect(sandbox, first.proc.output()).to.have.length(1);
    expect(production).to.have.length(1);
    expect(first.proc.stdout()).to.include('shown only now');

    expect((await listWith(first, sandbox[0]!)).status).to.equal(200);
    expect((await listWith(first, production[0]!)).status).to.equal(200);
    // the keys are on the terminal once, in the welcome box, never in a JSON log line
    const logLines = first.proc
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    expect(logLines.length).to.be.greaterThan(0);
    for (const line of logLines) expect(line).not.to.match(KEY);

    first.proc.child.kill('SIGTERM');
    expect((await exitWithin(first.proc, 10_000)).code).to.equal(0);
    const bytes = fs
      .readdirSync(path.join(dataDir, 'account'))
      .map((f) => fs.readFileSync(path.join(dataDir, 'account', f)).toString('latin1'))
      .join('');
    for (const key of [...sandbox, ...production]) {
      expect(bytes).not.to.include(key);
      expect(bytes).to.include(hashKey(key));
    }

    // the next start prints no key, says how to get one, and the first keys still work
    const second = await startService({ DATA_DIR: dataDir, VOUCHER_API_KEYS: '' }, COMPILED_MAIN);
    const until = Date.now() + 5_000;
    while (!second.proc.stdout().includes('VOUCHER_API_KEYS') && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    expect(second.proc.stdout()).not.to.match(KEY);
    expect(second.proc.stdout()).to.include('VOUCHER_API_KEYS');
    expect((await listWith(second, sandbox[0]!)).status).to.equal(200);
    second.proc.child.kill('SIGTERM');
    await exitWithin(second.proc, 10_000);
  });

  it('stops with exit code 1 and says why when its port is taken, still showing the keys it just made', async () => {
    const port = await freePort();
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    const freshDir = fs.mkdtempSync(path.join(os.tmpdir(), 'first-start-busy-'));
    try {
      const proc = run([COMPILED_MAIN], {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: freshDir,
        VOUCHER_API_KEYS: '',
        LOG_LEVEL: 'warn',
      });
      const { code } = await exitWithin(proc, 20_000);
      expect(code, proc.output()).to.equal(1);
      expect(proc.output()).to.match(/failed to start: listen EADDRINUSE/);
      expect(proc.stdout()).not.to.include('voucher service listening');
      // the keys exist (as hashes) from now on: they are shown once, as on any first start
      expect(new Set(proc.stdout().match(KEY) ?? []).size).to.equal(2);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
      fs.rmSync(freshDir, { recursive: true, force: true });
    }
  });
});
