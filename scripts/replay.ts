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
 *
 * With EVENTSTORE_URL or MONGODB_URL set, the stores are on the servers: the replay reads each
 * environment's events from EventStoreDB and rebuilds its read models in MONGODB_URL's database,
 * on the main thread, under the projector leases (scripts/replayServers.ts), with the same
 * progress bars and summary.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { PROJECTION_GROUPS } from '../src/projections/index.ts';
import { collectionsOf } from '../src/core/projection.ts';
import type { Environment } from '../src/application/context.ts';
import { ENVIRONMENTS, environmentFiles, groupReadFiles, openServers } from '../src/composition.ts';
import { loadConfig } from '../src/config.ts';
import type { RebuildResult } from '../src/core/projectionGroups.ts';
import type { FromReplayWorker, ReplayJob } from './replayWorker.ts';
import { DataDirInUse, lockDataDir } from '../src/infrastructure/dataDirLock.ts';
import { siblingWorkerUrl, spawnWorker } from '../src/infrastructure/supervisedWorker.ts';
import { systemClock } from '../src/domain/clock.ts';
import { LeaseHeld, replayOnServers, type Summary } from './replayServers.ts';

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

const WORKER_URL = siblingWorkerUrl('replayWorker', import.meta.url);

/**
 * The replay threads' V8 limits: a young generation of up to 64 MB, not the service threads' 4 MB
 * (WORKER_RESOURCE_LIMITS). A rebuild decodes and folds a page of 10,000 events at a time; with
 * 4 MB most of a page outlives a scavenge and is copied into the old generation. 64 MB took
 * about a sixth off the replay's CPU, for about 160 MB more of the replay's RSS
 * (docs/benchmark.md, Replay).
 */
const REPLAY_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 64 } as const;

const startWorker = (job: ReplayJob): Worker => spawnWorker(WORKER_URL, job, REPLAY_RESOURCE_LIMITS);

/** An environment's progress bars: a line per group. */
const progressBars = (environment: Environment): cliProgress.MultiBar =>
  new cliProgress.MultiBar(
    {
      format: `${environment.padEnd(10)} {group} [{bar}] {percentage}% | position {value}/{total} | {eta_formatted} left`,
      hideCursor: true,
      // each line fits an 80-column terminal (the bars clip what goes past its width)
      barsize: 24,
    },
    cliProgress.Presets.shades_classic,
  );

const replayEnvironment = async (dataDir: string, environment: Environment): Promise<Summary> => {
  const files = environmentFiles(dataDir, environment);
  if (!fs.existsSync(files.events)) {
    process.stdout.write(`${environment}: no event store at ${files.events}, skipped\n`);
    return { environment, events: 0, position: 0, ms: 0, skipped: true };
  }
  const readFiles = groupReadFiles(files);
  const interactive = process.stdout.isTTY === true;
  const bars = interactive ? progressBars(environment) : undefined;
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

const groupsLine = () =>
  PROJECTION_GROUPS.map((g) => `${g.name}: ${collectionsOf(g.projections).join(', ')}`).join('; ');

const replayAll = async (dataDir: string, environments: Environment[]): Promise<void> => {
  process.stdout.write(`Rebuilding read models (${groupsLine()}) in ${dataDir}\n`);
  const started = performance.now();
  const summaries: Summary[] = [];
  for (const environment of environments) summaries.push(await replayEnvironment(dataDir, environment));
  writeSummary(summaries, started);
};

/**
 * The replay on the servers (scripts/replayServers.ts): a progress bar per environment and group
 * on a terminal, a line per environment otherwise, then the summary.
 */
const replayServers = async (config: ReturnType<typeof loadConfig>, environments: Environment[]): Promise<void> => {
  const where = [
    config.eventstoreUrl ? 'events from EventStoreDB' : `events from ${config.dataDir}`,
    config.mongodbUrl ? 'read models in MongoDB' : `read models in ${config.dataDir}`,
  ].join(', ');
  process.stdout.write(`Rebuilding read models (${groupsLine()}): ${where}\n`);
  const servers = await openServers(config, systemClock);
  const interactive = process.stdout.isTTY === true;
  const started = performance.now();
  let bars:
    { environment: Environment; multi: cliProgress.MultiBar; of: Map<string, cliProgress.SingleBar> } | undefined;
  const stopBars = () => {
    bars?.multi.stop();
    bars = undefined;
  };
  try {
    const summaries = await replayOnServers({
      servers,
      dataDir: config.dataDir,
      environments,
      clock: systemClock,
      onProgress: (environment, group, done, total) => {
        if (!interactive) return;
        if (bars?.environment !== environment) {
          stopBars();
          bars = { environment, multi: progressBars(environment), of: new Map() };
        }
        let bar = bars.of.get(group);
        if (!bar) bars.of.set(group, (bar = bars.multi.create(total, done, { group })));
        bar.setTotal(total);
        bar.update(done);
      },
      onEnvironment: (s) => {
        stopBars();
        if (s.skipped) process.stdout.write(`${s.environment}: no event store, skipped\n`);
        else if (!interactive)
          process.stdout.write(
            `${s.environment}: replayed ${s.events} events (up to position ${s.position}) in ${s.ms.toFixed(0)} ms\n`,
          );
      },
    });
    writeSummary(summaries, started);
  } finally {
    stopBars();
    await servers.close();
  }
};

const writeSummary = (summaries: Summary[], started: number): void => {
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
  const config = loadConfig();
  const { dataDir } = config;
  // Nothing to protect (or rebuild) in a DATA_DIR that does not exist: no lock file is made there.
  const lock = fs.existsSync(dataDir) ? lockDataDir(dataDir, 'replay', systemClock) : undefined;
  try {
    if (config.eventstoreUrl || config.mongodbUrl) await replayServers(config, environments);
    else await replayAll(dataDir, environments);
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
  if (error instanceof LeaseHeld) {
    process.stderr.write(
      `replay refused: ${error.message}: stop the projector processes (ROLE=projector) of the environment first\n`,
    );
    process.exit(1);
  }
  const usage = error instanceof UsageError ? `${USAGE}\n` : '';
  process.stderr.write(`replay failed: ${error instanceof Error ? error.message : String(error)}\n${usage}`);
  process.exit(1);
});
