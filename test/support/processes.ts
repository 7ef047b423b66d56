/** Real service processes for end-to-end tests: spawn, wait for /health, collect output, stop. */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnNode, waitForHealth, type Proc } from '../../scripts/lib/processes.ts';

export { exitWithin, freePort, killAll, sleep, type Proc } from '../../scripts/lib/processes.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** What `npm start` runs, after its `npm run build`. */
export const COMPILED_MAIN = 'dist/src/main.js';

let built = false;
/** `npm run build` once per test run (incremental: fast when dist/ is up to date). */
export const buildOnce = (): void => {
  if (built) return;
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'pipe' });
  built = true;
};

/**
 * Runs `node --import tsx <args>` in the project root with extra environment variables; a script
 * under dist/ (the compiled build, built first) runs without tsx. A service goes through Kafka
 * only where `env` sets KAFKA_BROKERS (CI exports it for the Kafka tests).
 */
export const run = (args: string[], env: Record<string, string>): Proc => {
  const compiled = args[0]?.startsWith('dist/') ?? false;
  if (compiled) buildOnce();
  return spawnNode(args, { cwd: ROOT, env: { KAFKA_BROKERS: '', ...env }, tsx: !compiled });
};

export interface RunningService {
  proc: Proc;
  base: string;
}

/**
 * Starts `entry` (default `src/main.ts`; COMPILED_MAIN for what `npm start` runs) on 127.0.0.1 and a free port; resolves once /health
 * answers (at most 20 s).
 */
export const startService = async (env: Record<string, string>, entry = 'src/main.ts'): Promise<RunningService> => {
  const port = await freePort();
  const proc = run([entry], { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(proc, base, { timeoutMs: 20_000, requestTimeoutMs: 1_000 });
    return { proc, base };
  } catch {
    const exited = proc.child.exitCode !== null || proc.child.signalCode !== null;
    proc.child.kill('SIGKILL');
    throw new Error(`service did not answer /health within 20 s (exited: ${exited}); output:\n${proc.output()}`);
  }
};
