/** Real service processes for end-to-end tests: spawn, wait for /health, collect output, stop. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnNode, waitForHealth, type Proc } from '../../scripts/lib/processes.ts';

export { exitWithin, freePort, killAll, sleep, type Proc } from '../../scripts/lib/processes.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs `node --import tsx <args>` in the project root with extra environment variables. */
export const run = (args: string[], env: Record<string, string>): Proc => spawnNode(args, { cwd: ROOT, env });

export interface RunningService {
  proc: Proc;
  base: string;
}

/**
 * Starts `entry` (default `src/main.ts`) on 127.0.0.1 and a free port; resolves once /health
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
