/**
 * The newcomer's first `npm start`: with no key configured, the service creates one sandbox and
 * one production key, shows them once (on a terminal; here, with no terminal, in a 0600 file in
 * DATA_DIR, never in the log stream), stores only hashes, and on the next start shows no key at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { hashKey } from '../../src/application/apiKeys.ts';
import net from 'node:net';
import { secretsFile } from '../../src/welcome.ts';
import {
  buildOnce,
  COMPILED_MAIN,
  exitWithin,
  freePort,
  killAll,
  run,
  sleep,
  startService,
  type RunningService,
} from '../support/processes.ts';

const KEY = /sk_(test|live)_[A-Za-z0-9]{32}/g;
/** The same without the global flag (whose lastIndex would carry over between assertions). */
const ANY_KEY = /sk_(test|live)_[A-Za-z0-9]{32}/;

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

  it('with no terminal, writes one sandbox and one production key that work to a 0600 file, never to the log stream, and stores only their hashes', async () => {
    first = await startService({ DATA_DIR: dataDir, VOUCHER_API_KEYS: '', LOG_LEVEL: 'info' }, COMPILED_MAIN);
    const file = secretsFile(dataDir);
    expect(fs.statSync(file).mode & 0o777, 'the secrets file is readable only by its owner').to.equal(0o600);
    const written = fs.readFileSync(file, 'utf8');
    const printed = [...new Set(written.match(KEY) ?? [])];
    const sandbox = printed.filter((k) => k.startsWith('sk_test_'));
    const production = printed.filter((k) => k.startsWith('sk_live_'));
    expect(sandbox, written).to.have.length(1);
    expect(production).to.have.length(1);
    expect(written).to.include('shown only now');
    // the log stream (stdout) and stderr hold no key, only where the file is
    const until = Date.now() + 5_000;
    while (!first.proc.stdout().includes('"secrets_file"') && Date.now() < until) await sleep(50);
    expect(first.proc.output()).not.to.match(ANY_KEY);
    const logLines = first.proc
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    expect(logLines.length).to.be.greaterThan(0);
    expect(logLines.map((line) => (JSON.parse(line) as { secrets_file?: string }).secrets_file)).to.include(file);

    expect((await listWith(first, sandbox[0]!)).status).to.equal(200);
    expect((await listWith(first, production[0]!)).status).to.equal(200);
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

    // the next start shows no key, says how to get one and that the file is still there, and the first keys still work
    const second = await startService({ DATA_DIR: dataDir, VOUCHER_API_KEYS: '', LOG_LEVEL: 'info' }, COMPILED_MAIN);
    const deadline = Date.now() + 5_000;
    while (!second.proc.stdout().includes('still holds first-start secrets') && Date.now() < deadline) await sleep(50);
    expect(second.proc.output()).not.to.match(ANY_KEY);
    expect(second.proc.stdout()).to.include('VOUCHER_API_KEYS');
    expect(second.proc.stdout()).to.include('still holds first-start secrets');
    expect(fs.readFileSync(file, 'utf8')).to.equal(written);
    expect((await listWith(second, sandbox[0]!)).status).to.equal(200);
    second.proc.child.kill('SIGTERM');
    await exitWithin(second.proc, 10_000);
  });

  it('stops with exit code 1 and says why when its port is taken, still keeping the keys it just made (in the file)', async () => {
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
      expect(proc.output()).not.to.match(ANY_KEY);
      expect(new Set(fs.readFileSync(secretsFile(freshDir), 'utf8').match(KEY) ?? []).size).to.equal(2);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
      fs.rmSync(freshDir, { recursive: true, force: true });
    }
  });
});
