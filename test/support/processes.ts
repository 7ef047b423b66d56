/** Real service processes for end-to-end tests: spawn, wait for /health, collect output, stop. */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A port that was free a moment ago (the OS picked it for a listener we closed). */
export const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const server = net.createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as net.AddressInfo;
    server.close(() => resolve(port));
  });
});

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Proc {
  child: ChildProcess;
  output: () => string;
  stdout: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Every child still running; `killAll()` in an `after` hook stops them even when a test failed. */
const children = new Set<ChildProcess>();
export const killAll = async (): Promise<void> => {
  const running = [...children];
  for (const child of running) child.kill('SIGKILL');
  await Promise.race([
    Promise.all(running.map((child) => new Promise((resolve) => { if (child.exitCode !== null || child.signalCode !== null) resolve(null); else child.once('exit', resolve); }))),
    sleep(5_000),
  ]);
};

/** Runs `node --import tsx <args>` in the project root with extra environment variables. */
export const run = (args: string[], env: Record<string, string>): Proc => {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); stdout += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => { children.delete(child); resolve({ code, signal }); });
  });
  return { child, output: () => output, stdout: () => stdout, exited };
};

/** Resolves with the exit, or rejects after `ms` (the process is left for `killAll`). */
export const exitWithin = async (proc: Proc, ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`process did not exit within ${ms} ms; output:\n${proc.output()}`)), ms);
  });
  try { return await Promise.race([proc.exited, timeout]); } finally { clearTimeout(timer); }
};

export interface RunningService { proc: Proc; base: string }

/** Starts `src/main.ts` on 127.0.0.1 and a free port; resolves once /health answers (at most 20 s). */
export const startService = async (env: Record<string, string>): Promise<RunningService> => {
  const port = await freePort();
  const proc = run(['src/main.ts'], { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env });
  const base = `http://127.0.0.1:${port}`;
  let exited = false;
  void proc.exited.then(() => { exited = true; });
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && !exited) {
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1_000) });
      if (res.status === 200) return { proc, base };
    } catch { /* not listening yet */ }
    await sleep(100);
  }
  proc.child.kill('SIGKILL');
  throw new Error(`service did not answer /health within 20 s (exited: ${exited}); output:\n${proc.output()}`);
};
