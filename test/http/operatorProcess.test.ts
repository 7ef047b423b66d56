/**
 * The service's process as an operator handles it, for real: `npm start`, whose SIGTERM (to the
 * pid npm start has) reaches the service; one process per DATA_DIR (a second service and a
 * replay are refused while it runs); and `npm run replay` saying nothing about a service when
 * none runs.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import {
  buildOnce,
  COMPILED_MAIN,
  exitWithin,
  freePort,
  killAll,
  ROOT,
  run,
  sleep,
  type Proc,
} from '../support/processes.ts';

const KEY = 'sk_test_OperatorProcessTest0000000000001';

/** Whether a process with this pid exists (signal 0 checks without signalling). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Whether something accepts connections on 127.0.0.1:port. */
const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Waits until `condition` holds, checking every 100 ms for at most `ms`; returns whether it held. */
const within = async (ms: number, condition: () => boolean | Promise<boolean>): Promise<boolean> => {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await sleep(100);
  }
  return condition();
};

describe('the service process, as an operator runs it', function () {
  this.timeout(120_000);
  let dataDir: string;
  let port: number;
  let npm: ReturnType<typeof spawn> | undefined;
  let npmOutput = '';
  let servicePid: number | undefined;

  before(function () {
    this.timeout(120_000); // a fresh clone compiles the whole tree (dist/)
    buildOnce(); // npm start's prestart build then has nothing to do
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'operator-process-'));
  });
  after(async () => {
    if (npm && npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    // the service itself, if a failure left it running without npm (its pid is in its log line)
    if (servicePid !== undefined && alive(servicePid)) process.kill(servicePid, 'SIGKILL');
    await killAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const replay = async (): Promise<{ code: number | null; output: string }> => {
    const proc: Proc = run(['scripts/replay.ts'], { DATA_DIR: dataDir });
    const { code } = await exitWithin(proc, 60_000);
    return { code, output: proc.output() };
  };

  it('npm start: serves on its port', async () => {
    port = await freePort();
    npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        VOUCHER_API_KEYS: KEY,
        ADMIN_PASSWORD: 'operator-process-test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm.stdout!.on('data', (chunk: Buffer) => (npmOutput += chunk.toString()));
    npm.stderr!.on('data', (chunk: Buffer) => (npmOutput += chunk.toString()));
    const healthy = await within(60_000, async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1_000) })).ok;
      } catch {
        return false;
      }
    });
    expect(healthy, npmOutput).to.equal(true);
  });

  it("logs the service pid in its listening line (the node process, npm start's child)", async () => {
    await within(5_000, () => npmOutput.includes('voucher service listening'));
    const line = npmOutput.split('\n').find((l) => l.includes('voucher service listening'));
    expect(line, npmOutput).to.be.a('string');
    servicePid = (JSON.parse(line!) as { pid?: number }).pid;
    expect(servicePid, line).to.be.a('number').and.not.equal(npm!.pid);
    expect(alive(servicePid!)).to.equal(true);
  });

  it('warms its request path up before it listens (src/http/warmUp.ts)', () => {
    const lines = npmOutput.split('\n');
    const warmed = lines.findIndex((l) => l.includes('"request path warmed up"'));
    expect(warmed, npmOutput).to.be.above(-1);
    expect(warmed).to.be.below(lines.findIndex((l) => l.includes('voucher service listening')));
  });

  it('while it runs: a second service on the same DATA_DIR is refused at start, naming the lock', async () => {
    const second = run([COMPILED_MAIN], {
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      VOUCHER_API_KEYS: KEY,
    });
    const { code } = await exitWithin(second, 20_000);
    expect(code, second.output()).to.equal(1);
    expect(second.output()).to.contain('failed to start').and.contain(`DATA_DIR ${dataDir} is in use`);
  });

  it('while it runs: npm run replay refuses and rebuilds nothing', async () => {
    const { code, output } = await replay();
    expect(code, output).to.equal(1);
    expect(output).to.contain('replay refused').and.contain('is in use');
    expect(output).not.to.contain('Rebuilding');
  });

  it('SIGTERM to the pid npm start has stops the service: the port closes and the process exits', async () => {
    expect(npm, 'npm start from the first test').not.to.equal(undefined);
    npm!.kill('SIGTERM');
    const closed = await within(20_000, async () => !(await listening(port)));
    expect(closed, `port ${port} still open 20 s after SIGTERM to npm start (pid ${npm!.pid})`).to.equal(true);
    expect(await within(20_000, () => npm!.exitCode !== null || npm!.signalCode !== null)).to.equal(true);
    expect(npmOutput).to.contain('"signal":"SIGTERM"');
    if (servicePid !== undefined) expect(await within(20_000, () => !alive(servicePid!))).to.equal(true);
  });

  it('with no service running, npm run replay rebuilds without a word about one', async () => {
    const { code, output } = await replay();
    expect(code, output).to.equal(0);
    expect(output).to.contain('Rebuilding read models');
    expect(output).not.to.match(/warning|refused|in use/);
  });
});
