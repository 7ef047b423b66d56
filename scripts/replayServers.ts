/**
 * `npm run replay` when the service's stores are on servers (EVENTSTORE_URL, MONGODB_URL;
 * scripts/replay.ts calls it): each environment's events are read from its EventStoreDB stream
 * namespace (or its SQLite log without EVENTSTORE_URL), and its read models rebuilt in its MongoDB
 * database (or its SQLite files without MONGODB_URL), the core and analytics groups in one pass
 * over the log, on the main thread: the worker threads of the embedded replay open SQLite files,
 * and on servers the folding waits on the network, which a second thread would not shorten.
 *
 * On MongoDB the replay first takes each group's projector lease (decision 053, collection
 * `leases` of the environment's database) and writes only while it holds them (fenced writes,
 * renewed every third of the TTL); a projector process that holds one is running, so the replay
 * refuses (LeaseHeld, naming the holder) and changes nothing. It gives the leases up when done,
 * and a waiting projector process takes them and continues from the replay's checkpoint.
 */
import fs from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Environment } from '../src/application/context.ts';
import { environmentFiles, openReadStores, type ServerStores } from '../src/composition.ts';
import type { EventLog } from '../src/core/eventStore.ts';
import { Lease, LEASES, type LeaseDoc } from '../src/core/lease.ts';
import { rebuildGroups } from '../src/core/projectionGroups.ts';
import type { ReadStore } from '../src/core/readStore.ts';
import type { Clock } from '../src/domain/clock.ts';
import { EsdbEventStore } from '../src/infrastructure/eventStore/esdbEventStore.ts';
import { SqliteEventStore } from '../src/infrastructure/eventStore/sqliteEventStore.ts';
import { PROJECTION_GROUPS } from '../src/projections/index.ts';

/** What the replay did in one environment (the summary's line). */
export interface Summary {
  environment: Environment;
  events: number;
  position: number;
  ms: number;
  skipped?: boolean;
}

/** A projector lease held by another live process: the replay refuses and rebuilds nothing. */
export class LeaseHeld extends Error {
  constructor(
    readonly environment: Environment,
    readonly group: string,
    readonly holder: string,
    readonly expiresAt: Date,
  ) {
    super(
      `${environment}: the ${group} projector lease is held by ${holder} (until ${expiresAt.toISOString()}, renewed while it runs)`,
    );
  }
}

export interface ServerReplayOptions {
  servers: ServerStores;
  /** DATA_DIR: the SQLite side of a replay with one server only. */
  dataDir: string;
  environments: Environment[];
  clock: Clock;
  /** The replay's name as a lease holder (default `replay-<host>-<pid>`). */
  holder?: string;
  /** Lease TTL (default the Lease's, 15 s). */
  leaseTtlMs?: number;
  /** Told after each page, per group: the last position folded and the head position. */
  onProgress?: (environment: Environment, group: string, done: number, total: number) => void;
  /** Told when an environment is done or skipped. */
  onEnvironment?: (summary: Summary) => void;
}

/** Takes every group's lease, or gives back those taken and throws LeaseHeld naming the holder. */
const takeLeases = async (
  environment: Environment,
  stores: Record<string, ReadStore>,
  options: ServerReplayOptions,
): Promise<Lease[]> => {
  const holder = options.holder ?? `replay-${os.hostname()}-${process.pid}`;
  const taken: Lease[] = [];
  for (const group of PROJECTION_GROUPS) {
    const store = stores[group.name]!;
    const lease = new Lease({ store, name: group.name, holder, clock: options.clock, ttlMs: options.leaseTtlMs });
    if (await lease.tick()) {
      taken.push(lease);
      continue;
    }
    for (const mine of taken) await mine.release();
    const current = await store.get<LeaseDoc>(LEASES, group.name);
    throw new LeaseHeld(
      environment,
      group.name,
      current?.holder ?? 'another process',
      new Date(current?.expiresAt ?? 0),
    );
  }
  return taken;
};

const replayEnvironment = async (environment: Environment, options: ServerReplayOptions): Promise<Summary> => {
  const { servers } = options;
  const files = environmentFiles(options.dataDir, environment);
  if (!servers.eventStore && !fs.existsSync(files.events))
    return { environment, events: 0, position: 0, ms: 0, skipped: true };
  const events: EventLog & { close(): Promise<void> } = servers.eventStore
    ? new EsdbEventStore(servers.eventStore, { namespace: environment })
    : SqliteEventStore.open(files.events);
  const onMongo = await servers.mongo?.environment(environment);
  const stores: Record<string, ReadStore> = onMongo
    ? { core: onMongo.core, analytics: onMongo.analytics }
    : openReadStores(files).byGroup;
  let leases: Lease[] = [];
  let renewal: NodeJS.Timeout | undefined;
  try {
    if (onMongo) {
      leases = await takeLeases(environment, stores, options);
      const ttlMs = leases[0]!.ttlMs;
      renewal = setInterval(() => {
        for (const lease of leases) void lease.tick().catch(() => {}); // lost: the fenced writes fail
      }, ttlMs / 3);
    }
    const started = performance.now();
    const result = await rebuildGroups(
      events,
      PROJECTION_GROUPS.map((group, i) => ({
        reads: leases[i]?.fencedStore() ?? stores[group.name]!,
        projections: group.projections,
        checkpoint: group.checkpoint,
      })),
      (done, total) => {
        for (const group of PROJECTION_GROUPS) options.onProgress?.(environment, group.name, done, total);
      },
    );
    return { environment, ...result, ms: performance.now() - started };
  } finally {
    clearInterval(renewal);
    for (const lease of leases) await lease.release();
    await events.close();
    if (!onMongo) for (const store of Object.values(stores)) await store.close();
  }
};

/**
 * Rebuilds the read models of `environments`, one after the other, on the servers the options
 * name (see the file's comment). Rejects with LeaseHeld, before anything is written in that
 * environment, when a projector process holds one of its leases.
 */
export const replayOnServers = async (options: ServerReplayOptions): Promise<Summary[]> => {
  const summaries: Summary[] = [];
  for (const environment of options.environments) {
    const summary = await replayEnvironment(environment, options);
    options.onEnvironment?.(summary);
    summaries.push(summary);
  }
  return summaries;
};
