/**
 * `npm run replay [-- --env sandbox|production]`: rebuilds every read model of each environment from
 * its event log, in DATA_DIR (default ./data): the core group (vouchers, usage counts, applications;
 * read.db) and the analytics group (analytics aggregates, export records; analytics.db), each on a
 * thread of its own (scripts/replayWorker.ts), side by side.
 *
 * Stop the service first. The embedded stores are plain SQLite files, so the replay could open them
 * while the service runs, but the service's projector would keep writing the same collections and
 * checkpoint during the reset and replay (and its requests would read half-built read models).
 * A running service holds DATA_DIR's lock (src/infrastructure/dataDirLock.ts), so the replay
 * knows: it refuses, naming the lock, when a service (or another replay) holds it, and says
 * nothing about it otherwise. It holds the lock itself while it rebuilds, so a service started
 * meanwhile refuses to start.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { PROJECTION_GROUPS } from '../src/projections/index.ts';
import { collectionsOf } from '../src/core/projection.ts';
import type { Environment } from '../src/application/context.ts';
import { ENVIRONMENTS, environmentFiles, groupReadFiles } from '../src/composition.ts';
import { loadConfig } from '../src/config.ts';
import type { RebuildResult } from '../src/core/projectionGroups.ts';
import type { FromReplayWorker, ReplayJob } from './replayWorker.ts';
import { DataDirInUse, lockDataDir } from '../src/infrastructure/dataDirLock.ts';
import { systemClock } from '../src/domain/clock.ts';

interface Summary {
  environment: Environment;
  events: number;
  position: number;
  ms: number;
  skipped?: boolean;
}

const USAGE = 'usage: npm run replay [-- --env sandbox|production]';

class UsageError extends Error {}

const selectedEnvironments = (argv: string[]): Environment[] => {
  let values: { env?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { env: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (values.env === undefined) return ENVIRONMENTS;
  if (!ENVIRONMENTS.includes(values.env as Environment))
    throw new UsageError(`--env must be one of ${ENVIRONMENTS.join(', ')}, got "${values.env}"`);
  return [values.env as Environment];
};

const WORKER_URL = new URL(`./replayWorker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** Run from the .ts sources (under tsx), the worker registers tsx's loader first. */
const startWorker = (job: ReplayJob): Worker =>
  WORKER_URL.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then((api) => { api.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`,
        { eval: true, workerData: job },
      )
    : new Worker(WORKER_URL, { workerData: job });

const replayEnvironment = async (dataDir: string, environment: Environment): Promise<Summary> => {
  const files = environmentFiles(dataDir, environment);
  if (!fs.existsSync(files.events)) {
    process.stdout.write(`${environment}: no event store at ${files.events}, skipped\n`);
    return { environment, events: 0, position: 0, ms: 0, skipped: true };
  }
  const readFiles = groupReadFiles(files);
  const interactive = process.stdout.isTTY === true;
  const bars = interactive
    ? new cliProgress.MultiBar(
        {
          format: `${environment.padEnd(10)} {group} [{bar}] {percentage}% | position {value}/{total} | {eta_formatted} left`,
          hideCursor: true,
          // each line fits an 80-column terminal (the bars clip what goes past its width)
          barsize: 24,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  const started = performance.now();
  const workers: Worker[] = [];
  try {
    // Each group on a thread of its own (scripts/replayWorker.ts), side by side.
    const results = await Promise.all(
      PROJECTION_GROUPS.map((group) => {
        const worker = startWorker({ group: group.name, eventsFile: files.events, readsFile: readFiles[group.name]! });
        workers.push(worker);
        let bar: cliProgress.SingleBar | undefined;
        return new Promise<RebuildResult>((resolve, reject) => {
          worker.on('message', (message: FromReplayWorker) => {
            if (message.type === 'progress') {
              if (!bars) return;
              bar ??= bars.create(message.total, message.done, { group: group.name });
              bar.setTotal(message.total);
              bar.update(message.done);
            } else if (message.type === 'done') resolve({ events: message.events, position: message.position });
            else reject(new Error(`${group.name} group: ${message.message}`));
          });
          worker.on('error', reject);
          worker.on('exit', (code) =>
            reject(new Error(`${group.name} group: its thread exited (${code}) before it was done`)),
          );
        });
      }),
    );
    bars?.stop();
    const ms = performance.now() - started;
    // Every group replays the whole log: the same events, up to the same position.
    const result = results[0] ?? { events: 0, position: 0 };
    if (!interactive) {
      process.stdout.write(
        `${environment}: replayed ${result.events} events (up to position ${result.position}) in ${ms.toFixed(0)} ms\n`,
      );
    }
    return { environment, ...result, ms };
  } catch (error) {
    bars?.stop();
    throw error;
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
};

const replayAll = async (dataDir: string, environments: Environment[]): Promise<void> => {
  process.stdout.write(
    `Rebuilding read models (${PROJECTION_GROUPS.map((g) => `${g.name}: ${collectionsOf(g.projections).join(', ')}`).join('; ')}) in ${dataDir}\n`,
  );
  const started = performance.now();
  const summaries: Summary[] = [];
  for (const environment of environments) summaries.push(await replayEnvironment(dataDir, environment));
  process.stdout.write('\nSummary\n');
  for (const s of summaries) {
    process.stdout.write(
      s.skipped
        ? `  ${s.environment.padEnd(10)} skipped (no event store)\n`
        : `  ${s.environment.padEnd(10)} ${String(s.events).padStart(9)} events  ${(s.ms / 1000).toFixed(2)} s\n`,
    );
  }
  process.stdout.write(
    `  total      ${String(summaries.reduce((n, s) => n + s.events, 0)).padStart(9)} events  ${((performance.now() - started) / 1000).toFixed(2)} s\n`,
  );
};

const main = async (): Promise<void> => {
  const environments = selectedEnvironments(process.argv.slice(2));
  const { dataDir } = loadConfig();
  // Nothing to protect (or rebuild) in a DATA_DIR that does not exist: no lock file is made there.
  const lock = fs.existsSync(dataDir) ? lockDataDir(dataDir, 'replay', systemClock) : undefined;
  try {
    await replayAll(dataDir, environments);
  } finally {
    lock?.release();
  }
};

main().catch((error: unknown) => {
  if (error instanceof DataDirInUse) {
    process.stderr.write(
      `replay refused: ${error.message}: a running service keeps projecting into the read models the replay rebuilds\n`,
    );
    process.exit(1);
  }
  const usage = error instanceof UsageError ? `${USAGE}\n` : '';
  process.stderr.write(`replay failed: ${error instanceof Error ? error.message : String(error)}\n${usage}`);
  process.exit(1);
});
