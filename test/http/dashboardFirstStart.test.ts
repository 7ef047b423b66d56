/**
 * The operator password with the real process: generated on the first start and printed once in
 * the welcome box (never in a log line), the same one accepted after a restart, ADMIN_PASSWORD
 * taking over when set.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { DashboardClient } from '../support/dashboardClient.ts';
import { buildOnce, COMPILED_MAIN, exitWithin, killAll, sleep, startService } from '../support/processes.ts';

const PASSWORD_LINE = /operator password {2}(\S+)/;
const WELCOME_BOX = /={78}\n[\s\S]*Dashboard \(API keys\)[^\n]*\n[\s\S]*={78}\n/;

interface Running {
  base: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts the compiled service as `npm start` does (no configured keys, no ADMIN_PASSWORD unless given) and waits for its welcome box. */
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
  const deadline = Date.now() + 10_000;
  while (!WELCOME_BOX.test(service.proc.stdout()) && Date.now() < deadline) await sleep(50);
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

  it('first start: prints a generated password once, in the welcome box, never in a log line', async () => {
    const service = await start(dataDir);
    try {
      const output = service.output();
      generated = PASSWORD_LINE.exec(output)?.[1] ?? '';
      expect(generated, output).to.match(/^[a-z2-9]{5}(-[a-z2-9]{5}){3}$/);
      expect(output.split(generated).length - 1, 'times the password appears').to.equal(1);
      const logLines = output.split('\n').filter((line) => line.startsWith('{'));
      expect(logLines.length).to.be.greaterThan(0);
      expect(logLines.join('\n')).not.to.contain(generated);
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(303);
      expect((await new DashboardClient(service.base).login('guess')).status).to.equal(401);
    } finally {
      await service.stop();
    }
  });

  it('later starts: prints no password and accept the same one', async () => {
    const service = await start(dataDir);
    try {
      expect(service.output()).not.to.match(PASSWORD_LINE);
      expect(service.output()).not.to.contain(generated);
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(303);
    } finally {
      await service.stop();
    }
  });

  it('ADMIN_PASSWORD wins: only it signs in, and nothing is printed', async () => {
    const service = await start(dataDir, { ADMIN_PASSWORD: 'operator-chosen-password' });
    try {
      expect(service.output()).not.to.match(PASSWORD_LINE);
      expect(service.output()).not.to.contain('operator-chosen-password');
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
