/**
 * `npm run replay [-- --env sandbox|production]`: rebuilds every read model of each environment from
 * its event log, in DATA_DIR (default ./data): the core group (vouchers, usage counts, applications;
 * read.db) and the analytics group (analytics aggregates, export records; analytics.db), in one
 * pass over the log (src/core/projectionGroups.ts, rebuildGroups).
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
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { PROJECTION_GROUPS } from '../src/projections/index.ts';
import { collectionsOf } from '../src/core/projection.ts';
import type { Environment } from '../src/application/context.ts';
import { ENVIRONMENTS, environmentFiles, openReadStores } from '../src/composition.ts';
import { loadConfig } from '../src/config.ts';
import { SqliteEventStore } from '../src/infrastructure/eventStore/sqliteEventStore.ts';
import { rebuildGroups } from '../src/core/projectionGroups.ts';
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

const replayEnvironment = async (dataDir: string, environment: Environment): Promise<Summary> => {
  const files = environmentFiles(dataDir, environment);
  if (!fs.existsSync(files.events)) {
    process.stdout.write(`${environment}: no event store at ${files.events}, skipped\n`);
    return { environment, events: 0, position: 0, ms: 0, skipped: true };
  }
  const events = SqliteEventStore.open(files.events);
  // Each group's read models live in their own file (composition.ts).
  const { byGroup } = openReadStores(files);
  const interactive = process.stdout.isTTY === true;
  // One bar per group; the groups are rebuilt in one pass over the log, so they advance together.
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
  let groupBars: cliProgress.SingleBar[] | undefined;
  const started = performance.now();
  try {
    const result = await rebuildGroups(
      events,
      PROJECTION_GROUPS.map((group) => ({
        reads: byGroup[group.name]!,
        projections: group.projections,
        checkpoint: group.checkpoint,
      })),
      (done, total) => {
        if (!bars) return;
        groupBars ??= PROJECTION_GROUPS.map((group) => bars.create(total, done, { group: group.name }));
        for (const bar of groupBars) {
          bar.setTotal(total);
          bar.update(done);
        }
      },
    );
    bars?.stop();
    const ms = performance.now() - started;
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
    await events.close();
    for (const store of Object.values(byGroup)) await store.close();
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
