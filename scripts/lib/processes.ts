/**
 * Child Node processes for the bench (scripts/bench/) and the end-to-end tests (test/support/):
 * free ports, `node --import tsx <script>` with its output captured, waiting for /health, stopping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A port that was free a moment ago (the OS picked it for a listener we closed). */
export const freePort = (host = '127.0.0.1'): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

export interface Proc {
  /** For error messages. */
  name: string;
  child: ChildProcess;
  /** stdout and stderr interleaved (with `keepChunks`: only the last chunks). */
  output: () => string;
  stdout: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface SpawnOptions {
  cwd: string;
  env?: Record<string, string>;
  name?: string;
  /** Flags before `--import tsx`, e.g. `--cpu-prof`. */
  nodeFlags?: string[];
  /** Load tsx to run TypeScript sources (default); false for compiled JavaScript (dist/). */
  tsx?: boolean;
  /** Keep only the last `keepChunks` chunks of output (long-running children); all of it by default. */
  keepChunks?: number;
  /** Called when the process cannot be spawned; without it such an error is thrown, as by any emitter. */
  onError?: (error: Error) => void;
}

/** Every child not known to have exited (`stopAll`, `killAll`). */
const running = new Set<ChildProcess>();
const isGone = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

const chunkBuffer = (limit: number) => {
  const chunks: string[] = [];
  return {
    push: (chunk: Buffer) => {
      chunks.push(chunk.toString());
      if (chunks.length > limit) chunks.shift();
    },
    text: () => chunks.join(''),
  };
};

/** Runs `node [nodeFlags] --import tsx <args>` (without tsx: `node [nodeFlags] <args>`) in `cwd` with extra environment variables. */
export const spawnNode = (args: string[], options: SpawnOptions): Proc => {
  const loader = options.tsx === false ? [] : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), ...loader, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  if (options.onError) child.on('error', options.onError);
  const output = chunkBuffer(options.keepChunks ?? Infinity);
  const stdout = chunkBuffer(options.keepChunks ?? Infinity);
  child.stdout!.on('data', (chunk: Buffer) => {
    output.push(chunk);
    stdout.push(chunk);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output.push(chunk);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  return { name: options.name ?? args[0] ?? 'node', child, output: output.text, stdout: stdout.text, exited };
};

export interface HealthOptions {
  timeoutMs?: number;
  /** Abort a single /health request after this long (and try again); no limit by default. */
  requestTimeoutMs?: number;
}

/** Resolves once `${baseUrl}/health` answers 2xx; rejects if the process exits first or on the timeout. */
export const waitForHealth = async (proc: Proc, baseUrl: string, options: HealthOptions = {}): Promise<void> => {
  const { timeoutMs = 30_000, requestTimeoutMs } = options;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (isGone(proc.child)) {
      throw new Error(
        `${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it was healthy:\n${proc.output()}`,
      );
    }
    try {
      const signal = requestTimeoutMs === undefined ? undefined : AbortSignal.timeout(requestTimeoutMs);
      const res = await fetch(`${baseUrl}/health`, { signal });
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`${proc.name} not healthy after ${timeoutMs} ms:\n${proc.output()}`);
};

const stopChild = async (child: ChildProcess, graceMs: number): Promise<void> => {
  if (child.pid === undefined || isGone(child)) return; // never started, or gone
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const graceful = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
  if (!graceful) {
    child.kill('SIGKILL');
    await exited;
  }
};

/** SIGTERM, then SIGKILL if the process has not exited after `graceMs`. */
export const stopProcess = (proc: Proc, graceMs = 15_000): Promise<void> => stopChild(proc.child, graceMs);

/** `stopProcess` on every child still running. */
export const stopAll = async (graceMs = 15_000): Promise<void> => {
  await Promise.all([...running].map((child) => stopChild(child, graceMs)));
};

/** SIGKILL to every child still running (e.g. in an `after` hook, even when a test failed); waits at most 5 s. */
export const killAll = async (): Promise<void> => {
  const children = [...running];
  for (const child of children) child.kill('SIGKILL');
  await Promise.race([
    Promise.all(
      children.map(
        (child) =>
          new Promise((resolve) => {
            if (isGone(child)) resolve(null);
            else child.once('exit', resolve);
          }),
      ),
    ),
    sleep(5_000),
  ]);
};

/** Resolves with the exit, or rejects after `ms` (the process is left for `killAll`/`stopAll`). */
export const exitWithin = async (proc: Proc, ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`process did not exit within ${ms} ms; output:\n${proc.output()}`)), ms);
  });
  try {
    return await Promise.race([proc.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
};
