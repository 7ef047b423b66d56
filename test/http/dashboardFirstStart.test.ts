/**
 * The operator password with the real process: generated on the first start and shown once (with
 * no terminal, as here: in the 0600 secrets file in DATA_DIR, never in the log stream), the same
 * one accepted after a restart, ADMIN_PASSWORD taking over when set.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { secretsFile } from '../../src/welcome.ts';
import { DashboardClient } from '../support/dashboardClient.ts';
import { buildOnce, COMPILED_MAIN, exitWithin, killAll, sleep, startService } from '../support/processes.ts';

const PASSWORD_LINE = /operator password {2}(\S+)/;

interface Running {
  base: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts the compiled service as `npm start` does (no configured keys, no ADMIN_PASSWORD unless given) and waits for its welcome log line. */
const start = async (dataDir: string, extraEnv: Record<string, string> = {}): Promise<Running> => {
  const service = await startService(
    {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ADMIN_PASSWORD: '',
      VOUCHER_API_KEYS: '',
      ...extraEnv,
    },
    COMPILED_MAIN,
  );
  // the welcome (a log line naming the secrets file, or how to get a key) follows "listening"
  const deadline = Date.now() + 10_000;
  while (!/secrets_file|VOUCHER_API_KEYS/.test(service.proc.stdout()) && Date.now() < deadline) await sleep(50);
  return {
    base: service.base,
    output: service.proc.output,
    stop: async () => {
      service.proc.child.kill('SIGTERM');
      await exitWithin(service.proc, 10_000);
    },
  };
};

describe('operator password on the real process', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(function () {
    this.timeout(120_000); // a fresh clone compiles the whole tree (dist/)
    buildOnce();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-admin-'));
  });
  after(async () => {
    await killAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  let generated: string;
  const secrets = () => fs.readFileSync(secretsFile(dataDir), 'utf8');

  it('first start: writes a generated password once to the 0600 secrets file, never to the log stream', async () => {
    const service = await start(dataDir);
    try {
      expect(fs.statSync(secretsFile(dataDir)).mode & 0o777).to.equal(0o600);
      generated = PASSWORD_LINE.exec(secrets())?.[1] ?? '';
      expect(generated, secrets()).to.match(/^[a-z2-9]{5}(-[a-z2-9]{5}){3}$/);
      expect(secrets().split(generated).length - 1, 'times the password appears').to.equal(1);
      const output = service.output();
      expect(output).not.to.contain(generated);
      const logLines = output.split('\n').filter((line) => line.startsWith('{'));
      expect(logLines.length).to.be.greaterThan(0);
      expect(logLines.join('\n')).to.contain('secrets_file');
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(303);
      expect((await new DashboardClient(service.base).login('guess')).status).to.equal(401);
    } finally {
      await service.stop();
    }
  });

  it('later starts: show no password and accept the same one', async () => {
    const before = secrets();
    const service = await start(dataDir);
    try {
      expect(service.output()).not.to.match(PASSWORD_LINE);
      expect(service.output()).not.to.contain(generated);
      expect(secrets()).to.equal(before);
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(303);
    } finally {
      await service.stop();
    }
  });

  it('ADMIN_PASSWORD wins: only it signs in, and it is shown nowhere', async () => {
    const before = secrets();
    const service = await start(dataDir, { ADMIN_PASSWORD: 'operator-chosen-password' });
    try {
      expect(service.output()).not.to.match(PASSWORD_LINE);
      expect(service.output()).not.to.contain('operator-chosen-password');
      expect(secrets()).to.equal(before);
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(401);
      expect((await new DashboardClient(service.base).login('operator-chosen-password')).status).to.equal(303);
    } finally {
      await service.stop();
    }
  });

  it('reads ADMIN_PASSWORD in config.ts (empty is unset)', () => {
    expect(loadConfig({ ADMIN_PASSWORD: 'x y z' }).adminPassword).to.equal('x y z');
    expect(loadConfig({ ADMIN_PASSWORD: '' }).adminPassword).to.equal(undefined);
    expect(loadConfig({}).adminPassword).to.equal(undefined);
  });
});
