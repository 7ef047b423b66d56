/**
 * The bench's children (the ceiling app, the service) and its lifecycle: whatever ends the run
 * (success, a failure, a signal) stops every child and removes the temp data dirs first.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  freePort as freePortOn,
  spawnNode,
  stopAll,
  stopProcess,
  waitForHealth as waitForHealthOf,
  type Proc,
} from '../lib/processes.ts';
import { HOST } from './cli.ts';

export type Child = Proc;

/** Temp dirs removed at the end of the run (one kept with --keep-data is not added). */
export const tempDirs: string[] = [];

/**
 * A new directory named `prefix` and a random suffix, under `under` (the system's temporary
 * directory unless said), removed at the end of the run unless `keep`.
 */
export const freshTempDir = (prefix: string, { under = os.tmpdir(), keep = false } = {}): string => {
  const dir = fs.mkdtempSync(path.join(under, prefix));
  if (!keep) tempDirs.push(dir);
  return dir;
};

export const freePort = (): Promise<number> => freePortOn(HOST);

/**
 * The node flags the service runs with, as `npm start` (package.json) and the container
 * (Dockerfile) start it: one V8 helper thread for garbage collection instead of four (decision
 * 081). The bench starts every service with them; a unit test keeps the three in step.
 */
export const SERVICE_NODE_FLAGS = ['--v8-pool-size=1'];

/**
 * `node [nodeFlags] --import tsx <script>` in `cwd`, or with `compiled` `node [nodeFlags] <script>`
 * (a script of `dist/`, as `npm start` runs the service); a failed spawn ends the bench through
 * its cleanup.
 */
export const startChild = (
  name: string,
  cwd: string,
  script: string,
  env: Record<string, string>,
  nodeFlags: string[] = [],
  compiled = false,
): Child =>
  spawnNode([script], {
    name,
    cwd,
    // a service goes through Kafka only where a scenario asks for it (KAFKA_BROKERS in its env)
    env: { KAFKA_BROKERS: '', ...env },
    nodeFlags,
    tsx: !compiled,
    keepChunks: 200,
    onError: (error) => void abort(new Error(`${name} could not be started: ${error.message}`)),
  });

/**
 * The service's script, compiled: what `npm start` and the container run. Under tsx every function
 * made at run time is also given its name (esbuild's `keepNames`), a cost per closure that the
 * compiled service does not pay, so a bench of the sources measured a slower service than the one
 * deployed (decision 091).
 */
export const SERVICE_SCRIPT = 'dist/src/main.js';

const built = new Set<string>();

/** `buildCheckout(root)` once per run, before the first service started from `root`. */
export const ensureBuilt = (root: string): void => {
  if (built.has(root)) return;
  buildCheckout(root);
  built.add(root);
};

/**
 * The service of checkout `root`, compiled (built first if this run has not yet) and started as
 * `npm start` starts it, with `nodeFlags` (SERVICE_NODE_FLAGS and any the scenario adds).
 */
export const startServiceProcess = (
  name: string,
  root: string,
  env: Record<string, string>,
  nodeFlags: string[] = SERVICE_NODE_FLAGS,
): Child => {
  ensureBuilt(root);
  return startChild(name, root, SERVICE_SCRIPT, env, nodeFlags, true);
};

/**
 * `npm run build` in a checkout, so that its `dist/` is the JavaScript of its sources (tsc builds
 * incrementally: seconds when nothing changed); throws with the build's output when it fails.
 */
export const buildCheckout = (root: string): void => {
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(
      `npm run build in ${root} failed (${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`,
    );
  }
};

export const waitForHealth = (child: Child, baseUrl: string, timeoutMs = 30_000): Promise<void> =>
  waitForHealthOf(child, baseUrl, { timeoutMs });

export const stopChild = (child: Child): Promise<void> => stopProcess(child, 15_000);

/** Removes the temporary directories made so far (their processes stopped first). */
export const removeTempDirs = (): void => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
};

const cleanUp = async (): Promise<void> => {
  await stopAll(15_000);
  removeTempDirs();
};

let exiting = false;
const abort = async (error: unknown) => {
  if (exiting) return;
  exiting = true;
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  await cleanUp().catch(() => undefined);
  process.exit(1);
};

/** Runs `main`, then cleans up and exits: 0 when it resolved, 1 when it (or anything) failed. */
export const runBench = (main: () => Promise<void>): void => {
  process.on('SIGINT', () => void abort(new Error('interrupted')));
  process.on('uncaughtException', (error) => void abort(error));
  process.on('unhandledRejection', (error) => void abort(error));
  process.on('SIGTERM', () => void abort(new Error('terminated')));
  main().then(async () => {
    await cleanUp();
    process.exit(0);
  }, abort);
};
