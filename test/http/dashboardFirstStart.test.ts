/**
 * The operator password with the real process: generated on the first start and printed once in
 * the welcome box (never in a log line), the same one accepted after a restart, ADMIN_PASSWORD
 * taking over when set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { DashboardClient } from '../support/dashboardClient.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PASSWORD_LINE = /operator password {2}(\S+)/;

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const server = net.createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as net.AddressInfo;
    server.close(() => resolve(port));
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Running { child: ChildProcess; base: string; output: () => string; stop: () => Promise<void> }

const children = new Set<ChildProcess>();

/** Starts `src/main.ts` and waits until the welcome box is printed (the process started listening). */
const start = async (dataDir: string, extraEnv: Record<string, string> = {}): Promise<Running> => {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...extraEnv };
  if (!('ADMIN_PASSWORD' in extraEnv)) delete env.ADMIN_PASSWORD;
  delete env.VOUCHER_API_KEYS;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const exited = new Promise<void>((resolve) => { child.once('exit', () => { children.delete(child); resolve(); }); });
  let done = false;
  void exited.then(() => { done = true; });
  while (!done && !/={78}\n[\s\S]*Dashboard \(API keys\)[^\n]*\n[\s\S]*={78}\n/.test(output)) await sleep(50);
  if (done) throw new Error(`the service exited before listening:\n${output}`);
  return {
    child, base: `http://127.0.0.1:${port}`, output: () => output,
    stop: async () => { child.kill('SIGTERM'); await exited; },
  };
};

describe('operator password on the real process', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(() => { dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-admin-')); });
  after(() => {
    for (const child of children) child.kill('SIGKILL');
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
    } finally { await service.stop(); }
  });

  it('later starts: prints no password and accept the same one', async () => {
    const service = await start(dataDir);
    try {
      expect(service.output()).not.to.match(PASSWORD_LINE);
      expect(service.output()).not.to.contain(generated);
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(303);
    } finally { await service.stop(); }
  });

  it('ADMIN_PASSWORD wins: only it signs in, and nothing is printed', async () => {
    const service = await start(dataDir, { ADMIN_PASSWORD: 'operator-chosen-password' });
    try {
      expect(service.output()).not.to.match(PASSWORD_LINE);
      expect(service.output()).not.to.contain('operator-chosen-password');
      expect((await new DashboardClient(service.base).login(generated)).status).to.equal(401);
      expect((await new DashboardClient(service.base).login('operator-chosen-password')).status).to.equal(303);
    } finally { await service.stop(); }
  });

  it('reads ADMIN_PASSWORD in config.ts (empty is unset)', () => {
    expect(loadConfig({ ADMIN_PASSWORD: 'x y z' }).adminPassword).to.equal('x y z');
    expect(loadConfig({ ADMIN_PASSWORD: '' }).adminPassword).to.equal(undefined);
    expect(loadConfig({}).adminPassword).to.equal(undefined);
  });
});
