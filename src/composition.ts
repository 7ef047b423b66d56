import path from 'node:path';
import type { Logger } from 'pino';
import { ANALYTICS_GROUP, CORE_GROUP } from './projections/index.ts';
import { ApiKeyRegistry, type ApiKeyEvent } from './application/apiKeys.ts';
import type { EnvironmentEvent } from './application/events.ts';
import { CodeRegistry } from './application/codeRegistry.ts';
import { CommandHandler } from './core/commandHandler.ts';
import type { ApplyHooks, ApplyMode, EnvContext, Environment } from './application/context.ts';
import type { EventStore, Subscription } from './core/eventStore.ts';
import { RESTART_DELAY_MS } from './core/logConsumer.ts';
import { ExportJobs } from './application/exports/jobs.ts';
import { DEFAULT_QUOTAS, type Quotas } from './application/quotas.ts';
import { randomIds, type IdGenerator } from './application/ids.ts';
import { ORDER_CACHE_SIZE } from './application/orders.ts';
import { AttemptRecorder } from './application/telemetry.ts';
import { expireDueVouchers } from './application/vouchers.ts';
import type { Clock } from './domain/clock.ts';
import type { VoucherStreamEvent } from './domain/voucher/events.ts';
import { voucherDecider } from './domain/voucher/decide.ts';
import type { VoucherCommand } from './domain/voucher/commands.ts';
import { DomainError } from './domain/errors.ts';
import type { VoucherState } from './domain/voucher/state.ts';
import type { OrderEvent } from './domain/order/events.ts';
import { orderDecider, type OrderCommand } from './domain/order/decide.ts';
import type { OrderState } from './domain/order/state.ts';
import { SqliteEventStore, type SqliteEventStoreOptions } from './infrastructure/eventStore/sqliteEventStore.ts';
import { DEFAULT_SNAPSHOT_EVERY, type SnapshotStore } from './core/snapshotStore.ts';
import { SqliteKvStore } from './infrastructure/kvStore/sqliteKvStore.ts';
import { SqliteSnapshotStore } from './infrastructure/snapshots/sqliteSnapshotStore.ts';
import { checkpointer } from './infrastructure/sqliteWal.ts';
import { voucherSnapshots } from './domain/voucher/snapshot.ts';
import type { ProjectorHandle } from './core/projectionRunner.ts';
import { DEFAULT_PROJECTOR_GATHER_MS, ProjectorThread } from './infrastructure/projector/projectorThread.ts';
import { startGroup } from './core/projectionGroups.ts';
import { SqliteReadStore } from './infrastructure/readStore/sqliteReadStore.ts';
import { ReadStoreDeliveries } from './infrastructure/webhooks/readStoreDeliveries.ts';
import { SqliteDeliveries } from './infrastructure/webhooks/sqliteDeliveries.ts';
import { connectEsdb, EsdbEventStore, type EsdbClient } from './infrastructure/eventStore/esdbEventStore.ts';
import { openMongoStores, type MongoStores } from './infrastructure/mongo/mongoStores.ts';
import { MongoReadStore } from './infrastructure/readStore/mongoReadStore.ts';
import { MongoKvStore } from './infrastructure/kvStore/mongoKvStore.ts';
import type { KvStore } from './core/kvStore.ts';
import type { ReadStore } from './core/readStore.ts';
import type { RateLimitStoreFactory } from './http/rateLimits.ts';
// --- webhooks ---
import { endpointDecider, type EndpointCommand, type EndpointState } from './domain/webhooks/endpoint.ts';
import type { WebhookEndpointEvent } from './domain/webhooks/events.ts';
import { defaultWebhookSettings, type WebhookSettings } from './application/webhooks/settings.ts';
import {
  DeliveryStore,
  PUBLISHER_CHECKPOINT,
  type DeliveryControl,
  type DeliveryDoc,
  type DeliveryStorage,
} from './application/webhooks/deliveryStore.ts';
import { WebhookPublisher } from './application/webhooks/publisher.ts';
import type { ReadinessProbe, RoleReadiness } from './http/ops.ts';
import { WebhookDispatcher, type Scheduler } from './application/webhooks/dispatcher.ts';
import { disableEndpoint } from './application/webhooks/endpoints.ts';
import { localDeliveryControl, purgeDeliveries } from './application/webhooks/deliveries.ts';
import { webhookQueueStats, type EndpointQueueStats } from './application/webhooks/queueStats.ts';
import { createHttpSender, type Resolve } from './infrastructure/webhooks/httpSender.ts';
import { mainThreadLoad } from './infrastructure/mainThreadLoad.ts';
import { WebhookThread } from './infrastructure/webhooks/webhookThread.ts';
import { BusDeliveries } from './application/webhooks/busDeliveries.ts';
import type { Bus } from './core/bus.ts';
import { createBus, kafkaLogTo, type BusSettings } from './infrastructure/bus/createBus.ts';
import fs from 'node:fs';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { Lease, LeasedRunner } from './core/lease.ts';
import { CheckpointWatcher } from './core/checkpointWatcher.ts';
import type { GroupDefinition } from './core/projectionGroups.ts';
import type { Role } from './config.ts';

/** Test seams of webhook delivery: DNS answers, the jitter's random source, timers. */
export interface WebhookHooks {
  resolve?: Resolve;
  random?: () => number;
  scheduler?: Scheduler;
}

/** The service's version, as `user-agent: voucher-service-webhooks/<version>` says it. */
const VERSION = (() => {
  try {
    const file = new URL('../package.json', import.meta.url);
    const alt = new URL('../../package.json', import.meta.url); // from dist/src
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : fs.readFileSync(alt, 'utf8');
    return String((JSON.parse(text) as { version?: string }).version ?? '0.0.0');
  } catch {
    return '0.0.0';
  }
})();
// --- end of webhooks ---

export const ENVIRONMENTS: Environment[] = ['sandbox', 'production'];

/**
 * The servers that hold the stores in place of DATA_DIR's files (decision 049). Each is optional:
 * what is not on a server stays embedded.
 */
export interface ServerStores {
  /**
   * EVENTSTORE_URL's client: each environment's events in its own stream namespace (`sandbox.`,
   * `production.`), the account's key events in `account.`. Apply runs in `two-append` mode.
   */
  eventStore?: EsdbClient;
  /** MONGODB_URL's stores: read models, key-value records, webhook deliveries, the account's records, rate-limit counters. */
  mongo?: MongoServer;
}

/** The MongoDB stores composition asks for (mongoServer builds them from openMongoStores). */
export interface MongoServer {
  /** An environment's stores, in its own database. */
  environment(environment: Environment): Promise<{
    core: ReadStore;
    analytics: ReadStore;
    kv: KvStore;
    /** Webhook deliveries and the publisher's checkpoint (collections prefixed `webhooks_`). */
    webhooks: ReadStore;
    /** Voucher snapshots (decision 059); absent: in the SQLite file of DATA_DIR. */
    snapshots?: SnapshotStore;
  }>;
  /** The account's key-value records (key last-used times, the operator's settings), in the shared database. */
  account(): Promise<KvStore>;
  /** The rate limiter's counters, shared by every API instance. */
  rateLimitStores(): Promise<RateLimitStoreFactory>;
  close(): Promise<void>;
}

/** What MONGODB_URL's connection holds for composition (see MongoServer). */
export const mongoServer = (stores: MongoStores, clock: Clock): MongoServer => {
  const startSession = () => stores.connection.client.startSession();
  return {
    environment: async (environment) => ({
      ...(await stores.environment(environment)),
      webhooks: MongoReadStore.open(stores.connection.database(environment), startSession, { prefix: 'webhooks_' }),
    }),
    account: () => MongoKvStore.open(stores.connection.shared(), startSession, clock),
    rateLimitStores: () => stores.rateLimitStores(),
    close: () => stores.close(),
  };
};

/**
 * Connects to the servers the configuration names (EVENTSTORE_URL, MONGODB_URL), each checked
 * before the service starts: one that cannot be reached fails with an Error naming its variable
 * (connectEsdb, openMongoStores), and the ones already connected are closed.
 */
export const openServers = async (
  urls: { eventstoreUrl?: string; mongodbUrl?: string },
  clock: Clock,
): Promise<ServerStores & { close(): Promise<void> }> => {
  const eventStore = urls.eventstoreUrl ? await connectEsdb(urls.eventstoreUrl) : undefined;
  let mongo: MongoServer | undefined;
  try {
    if (urls.mongodbUrl) {
      mongo = mongoServer(await openMongoStores(urls.mongodbUrl, clock, { relaxedNamespaces: ['quotes'] }), clock);
    }
  } catch (error) {
    await eventStore?.dispose().catch(() => {});
    throw error;
  }
  return {
    ...(eventStore ? { eventStore } : {}),
    ...(mongo ? { mongo } : {}),
    close: async () => {
      await eventStore?.dispose();
      await mongo?.close();
    },
  };
};

/** The event store of a namespace (an environment, or `account`) on EventStoreDB or in its SQLite file. */
const openEventStore = <E extends EnvironmentEvent | ApiKeyEvent>(
  servers: ServerStores | undefined,
  namespace: Environment | 'account',
  file: string,
  options: SqliteEventStoreOptions<E> = {},
): EventStore<E> =>
  servers?.eventStore
    ? new EsdbEventStore<E>(servers.eventStore, { namespace })
    : SqliteEventStore.open<E>(file, { startWriter: true, ...options });

export interface EmbeddedOptions {
  dataDir: string;
  clock: Clock;
  logger: Logger;
  ids?: IdGenerator;
  readYourWritesMs?: number;
  /** Awaited before each export job starts (ExportJobsDeps.beforeJob): tests hold jobs back with it. */
  beforeExportJob?: (exportId: string) => Promise<void>;
  /**
   * Where the analytics projection group runs: `thread` (default), a worker thread per environment
   * with its own store connections (projectorThread.ts); `inline`, on the main thread
   * (PROJECTORS=inline: a single-core machine gains nothing from the thread). The core group
   * runs on the event store's writer thread (decision 087), or on the main thread where the event
   * store commits there (EVENT_STORE_WRITER=inline) or a server holds the stores.
   */
  projectors?: 'thread' | 'inline';
  /** Where the SQLite event stores commit appends (EVENT_STORE_WRITER; default `thread`: SqliteEventStoreOptions.writer). */
  eventStoreWriter?: 'thread' | 'inline';
  /**
   * How long the commits the projector thread is handed are gathered to fold them together, by the
   * event store's writer thread that forwards them or by the projector thread
   * (PROJECTOR_GATHER_MS; default DEFAULT_PROJECTOR_GATHER_MS; decisions 103, 111).
   */
  projectorGatherMs?: number;
  /** Where the SQLite snapshot stores write their snapshots (SNAPSHOT_WRITER; default `thread`: SqliteSnapshotStore's `writer`). */
  snapshotWriter?: 'thread' | 'inline';
  /**
   * How long a SQLite snapshot store gathers its saves to post them to the snapshot writer thread
   * as one window (SNAPSHOT_GATHER_MS; default DEFAULT_SNAPSHOT_GATHER_MS: SqliteSnapshotStore's
   * `gatherMs`; decision 112).
   */
  snapshotGatherMs?: number;
  /** Per-API-key quotas on stored quotes and exports (default DEFAULT_QUOTAS). */
  quotas?: Quotas;
  /** Webhook delivery settings (WEBHOOK_*; default: defaultWebhookSettings). */
  webhooks?: WebhookSettings;
  /** How apply writes to the voucher and order streams (APPLY_MODE; default: see `applyModeFor`). */
  applyMode?: ApplyMode;
  /** Test seams between the appends of a two-append apply. */
  applyHooks?: ApplyHooks;
  /** Test seams of webhook delivery (DNS, jitter, timers); given any, delivery runs inline. */
  webhookHooks?: WebhookHooks;
  /**
   * Where each environment's webhook publisher and dispatcher run: `thread` (default), a worker
   * thread per environment with its own store connections, at a lower priority
   * (webhookThread.ts); `inline`, on the main thread with the environment's clock
   * (WEBHOOK_DELIVERY=inline; always with test seams, which cannot cross to a thread).
   */
  webhookDelivery?: 'thread' | 'inline';
  /**
   * Kafka (KAFKA_*): the webhook publisher produces each voucher event to the environment's topic
   * and the dispatcher consumes it as a consumer group (decision 051); unset: deliveries are made
   * from the log directly.
   */
  kafka?: BusSettings;
  /** A bus for inline webhook delivery instead of `kafka` (tests: the in-memory bus); its owner starts and closes it. */
  webhookBus?: Bus;
  /**
   * Events between two snapshots of a voucher (SNAPSHOT_EVERY; default DEFAULT_SNAPSHOT_EVERY);
   * 0: no snapshots, a voucher is folded from its stream's start and kept whole in memory.
   */
  snapshotEvery?: number;
  /** Told each append's duration in seconds, from the call to its durable commit (`GET /metrics`). */
  onAppend?: (environment: Environment, seconds: number) => void;
  /**
   * Servers in place of the embedded stores (EVENTSTORE_URL, MONGODB_URL). With either, the
   * analytics group and webhook delivery run on the main thread (their threads open the SQLite
   * files). The caller closes the servers' connections after `close()`.
   */
  servers?: ServerStores;
  /**
   * What this process runs (ROLE, decision 053; default `all`). Other roles need both servers:
   * `api` answers writes once the core group's checkpoint in the read store reaches them
   * (CheckpointWatcher); `projector` runs the projection groups, `dispatcher` webhook delivery,
   * each group under a lease (Lease) so one process at a time writes it.
   */
  role?: Role;
  /** Lease settings of the roles: TTL (default 15 s); `timers: false` leaves the checks to the caller (tests). */
  leases?: { ttlMs?: number; timers?: boolean; holder?: string };
}

/**
 * Times every append to `store` into `record`, the store's own code untouched. An append method
 * that calls the other (the SQLite store's appendToStream calls appendToStreams) is timed once.
 */
export const timeAppends = (store: EventStore<EnvironmentEvent>, record: (seconds: number) => void): void => {
  let inside = false;
  const timed =
    <A extends unknown[], R>(append: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      if (inside) return append.apply(store, args);
      const started = performance.now();
      let result: Promise<R>;
      inside = true;
      try {
        result = append.apply(store, args);
      } finally {
        inside = false;
      }
      const done = () => record((performance.now() - started) / 1000);
      result.then(done, done);
      return result;
    };
  store.appendToStream = timed(store.appendToStream);
  store.appendToStreams = timed(store.appendToStreams);
};

/**
 * The apply mode for a store: the one asked for, else `atomic` when the store appends to several
 * streams atomically (`atomicMultiStream` not false), else `two-append`. Asking for `atomic` on a
 * store without it stops the start.
 */
export const applyModeFor = (store: EventStore<EnvironmentEvent>, asked?: ApplyMode): ApplyMode => {
  const atomic = store.atomicMultiStream !== false;
  if (asked === 'atomic' && !atomic)
    throw new Error('APPLY_MODE=atomic needs an event store with an atomic multi-stream append; use two-append');
  return asked ?? (atomic ? 'atomic' : 'two-append');
};

/** Paths of one environment's embedded stores: each environment has its own files. */
export const environmentFiles = (dataDir: string, environment: Environment) => ({
  events: path.join(dataDir, environment, 'events.db'),
  /** The core group's read models: vouchers, usage counts, usage history. */
  reads: path.join(dataDir, environment, 'read.db'),
  /**
   * The analytics group's read models (analytics aggregates, export records), in a file of their
   * own: SQLite has one writer per file, and the projector thread's transactions made the core
   * group's wait for the lock (the busy handler sleeps the main thread), 0.3–1 ms per batch.
   */
  analytics: path.join(dataDir, environment, 'analytics.db'),
  kv: path.join(dataDir, environment, 'state.db'),
  /** Webhook deliveries and the publisher's checkpoint: the service's own state, not a read model (replay leaves it). */
  webhooks: path.join(dataDir, environment, 'webhooks.db'),
  /** Voucher snapshots (decision 059): derived from the event log, deleted without loss. */
  snapshots: path.join(dataDir, environment, 'snapshots.db'),
  exports: path.join(dataDir, environment, 'exports'),
});

/** The read store file of each projection group: `core` (read.db) and `analytics` (analytics.db). */
export const groupReadFiles = (files: ReturnType<typeof environmentFiles>): Record<string, string> => ({
  [CORE_GROUP.name]: files.reads,
  [ANALYTICS_GROUP.name]: files.analytics,
});

/** Opens an environment's read stores, one per projection group: `core` (read.db) and `analytics` (analytics.db). */
export const openReadStores = (files: ReturnType<typeof environmentFiles>) => {
  const core = SqliteReadStore.open(files.reads);
  const analytics = SqliteReadStore.open(files.analytics);
  return { byGroup: { [CORE_GROUP.name]: core, [ANALYTICS_GROUP.name]: analytics }, core, analytics };
};

/** One environment on the embedded SQLite stores, with its projector running. */
export const openEmbeddedEnvironment = async (
  environment: Environment,
  options: EmbeddedOptions,
): Promise<EnvContext> => {
  const files = environmentFiles(options.dataDir, environment);
  const logger = options.logger.child({ environment });
  let thread: ProjectorThread | undefined;
  let webhookThread: WebhookThread | undefined;
  const { servers } = options;
  // The rows of each commit are handed to the projector thread (unless the event store's writer
  // thread forwards them to it) and to the webhook thread.
  let forwarded = false;
  // The threads open the SQLite files themselves: with a server, their work runs here.
  const embedded = !servers?.eventStore && !servers?.mongo;
  const events = openEventStore<EnvironmentEvent>(servers, environment, files.events, {
    writer: options.eventStoreWriter,
    onCommitted: (committed) => {
      if (!forwarded) thread?.committed(committed);
      webhookThread?.committed(committed);
    },
    // The core group (what a write's answer waits for) folds each commit on the writer thread,
    // before the commit is answered (decision 087).
    ...(embedded && {
      groupsOnWriter: {
        environment,
        groups: [CORE_GROUP.name],
        readsFile: files.reads,
        logLevel: options.logger.level,
        pollIntervalMs: 200,
      },
    }),
  });
  // Before anything else starts: APPLY_MODE=atomic on a store without an atomic multi-stream append stops here.
  const applyMode = applyModeFor(events, options.applyMode);
  const { onAppend } = options;
  if (onAppend) timeAppends(events, (seconds) => onAppend(environment, seconds));
  const onMongo = await servers?.mongo?.environment(environment);
  const { core: reads, analytics: analyticsReads } = onMongo ?? openReadStores(files);
  const kv = onMongo?.kv ?? SqliteKvStore.open(files.kv, options.clock, { relaxedNamespaces: ['quotes'] }); // quotes can be recomputed
  const snapshotEvery = options.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
  const snapshots =
    snapshotEvery > 0
      ? (onMongo?.snapshots ??
        SqliteSnapshotStore.open(files.snapshots, {
          writer: options.snapshotWriter ?? 'thread',
          ...(options.snapshotGatherMs !== undefined ? { gatherMs: options.snapshotGatherMs } : {}),
          onError: (error) => logger.warn({ err: error }, 'snapshot entries are looked up in the file for every key'),
        }))
      : undefined;
  const role = options.role ?? 'all';
  if (role !== 'all' && (!servers?.eventStore || !onMongo))
    throw new Error(`ROLE=${role} needs EVENTSTORE_URL and MONGODB_URL: the embedded SQLite files are one process's`);
  const roleGroups =
    role === 'all'
      ? undefined
      : {
          core: await roleGroup(role === 'projector', events, reads, CORE_GROUP, options, logger),
          analytics: await roleGroup(role === 'projector', events, analyticsReads, ANALYTICS_GROUP, options, logger),
        };
  // The core group (what a write's response waits for: read-your-writes) folds each commit before
  // the write's appends resolve: on the event store's writer thread, or else here in the same turn.
  // The heavier analytics group runs on the projector thread.
  const projector =
    roleGroups?.core ??
    (events instanceof SqliteEventStore ? await events.writerGroup(CORE_GROUP.name) : undefined) ??
    (await startGroup(events, reads, CORE_GROUP, logger));
  let analytics: ProjectorHandle;
  if (roleGroups) analytics = roleGroups.analytics;
  else if (embedded && (options.projectors ?? 'thread') === 'thread') {
    const gatherMs = options.projectorGatherMs ?? DEFAULT_PROJECTOR_GATHER_MS;
    thread = await ProjectorThread.start(
      {
        environment,
        groups: [ANALYTICS_GROUP.name],
        eventsFile: files.events,
        readsFile: files.analytics,
        logLevel: options.logger.level,
        pollIntervalMs: 200,
        gatherMs,
      },
      logger,
    );
    analytics = thread.group(ANALYTICS_GROUP.name);
    // The writer thread posts the commits' rows to the projector thread itself, a window's commits
    // in one message: the main thread saves a message per commit (decision 085), the projector
    // thread a wake-up per commit (decision 111).
    if (events instanceof SqliteEventStore) {
      const projectorThread = thread;
      const feed = () => projectorThread.openFeed();
      forwarded = events.forwardCommits(feed, gatherMs);
      projectorThread.onRestart(() => events.forwardCommits(feed, gatherMs));
    }
  } else {
    // The second group: analytics aggregates and export records, with their own checkpoint.
    analytics = await startGroup(events, analyticsReads, ANALYTICS_GROUP, logger);
  }
  const telemetry = new AttemptRecorder(events, options.clock, {
    onError: (err) => logger.error({ err }, 'order attempts lost: telemetry append failed'),
  });
  const quotas = options.quotas ?? DEFAULT_QUOTAS;
  const exports = new ExportJobs({
    events,
    reads,
    analyticsReads,
    clock: options.clock,
    analytics,
    dir: files.exports,
    logger,
    beforeJob: options.beforeExportJob,
    kv,
    quotas,
  });
  await exports.start();
  const webhookSettings = options.webhooks ?? defaultWebhookSettings();
  const ctx: EnvContext = {
    environment,
    events,
    reads,
    analyticsReads,
    kv,
    ...(snapshots ? { snapshots } : {}),
    projector,
    clock: options.clock,
    ids: options.ids ?? randomIds,
    vouchers: new CommandHandler<VoucherCommand, VoucherStreamEvent, VoucherState, EnvironmentEvent>(
      events,
      voucherDecider,
      {
        ...(snapshots ? { snapshots: { store: snapshots, codec: voucherSnapshots, every: snapshotEvery } } : {}),
        onSnapshotError: (err, stream) => logger.warn({ err, stream }, 'voucher snapshot not written or read'),
        conflictError: () =>
          new DomainError(
            'CONCURRENT_MODIFICATION',
            'The voucher is being changed by another writer; retry the request',
            {},
          ),
      },
    ),
    orders: new CommandHandler<OrderCommand, OrderEvent, OrderState, EnvironmentEvent>(events, orderDecider, {
      cacheSize: ORDER_CACHE_SIZE,
      conflictError: () =>
        new DomainError(
          'CONCURRENT_MODIFICATION',
          'The order is being changed by another writer; retry the request',
          {},
        ),
    }),
    codes: new CodeRegistry(events),
    readYourWritesMs: options.readYourWritesMs ?? 5_000,
    applyMode,
    ...(options.applyHooks ? { applyHooks: options.applyHooks } : {}),
    analytics,
    telemetry,
    exports,
    quotas,
    webhooks: {
      endpoints: new CommandHandler<EndpointCommand, WebhookEndpointEvent, EndpointState, EnvironmentEvent>(
        events,
        endpointDecider,
        {
          conflictError: () =>
            new DomainError('CONCURRENT_MODIFICATION', 'The webhook endpoint is being changed; retry the request', {}),
        },
      ),
      policy: { environment, allowedCidrs: webhookSettings.allowedCidrs },
    },
  };
  const hooks = options.webhookHooks ?? {};
  if (role !== 'all') {
    const probes: ReadinessProbe[] = [];
    if (roleGroups)
      for (const [name, group] of Object.entries(roleGroups))
        if (group.runner) probes.push(leaseProbe(`${environment}.lease.${name}`, group.runner));
    probes.push(...(await startRoleWebhooks(ctx, onMongo!.webhooks, role, webhookSettings, hooks, options, logger)));
    roleProbes.set(ctx, probes);
    return ctx;
  }
  const inline =
    !embedded ||
    options.webhookDelivery === 'inline' ||
    options.webhookBus !== undefined ||
    Object.values(hooks).some((hook) => hook !== undefined);
  if (inline) {
    const store = onMongo?.webhooks ?? SqliteReadStore.open(files.webhooks);
    await startWebhooks(ctx, store, webhookSettings, hooks, logger, options);
  } else
    webhookThread = await startWebhookThread(ctx, files, webhookSettings, options.logger.level, logger, options.kafka);
  return ctx;
};

/** The deliveries' storage on a webhooks store: a table of columns on SQLite, documents elsewhere (MongoDB). */
const deliveryStorageOf = (store: ReadStore): DeliveryStorage =>
  store instanceof SqliteReadStore ? new SqliteDeliveries(store) : new ReadStoreDeliveries(store);

/** A process's name as a lease holder: host, pid and a random part (two processes never share one). */
const leaseHolder = (options: EmbeddedOptions): string =>
  options.leases?.holder ?? `${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;

/**
 * A projection group in a role other than `all`, as the rest of the service sees it: its
 * checkpoint read from the read store (CheckpointWatcher); in the `projector` role the group also
 * runs, under the lease named after the group (`runner`), writing only while it holds it.
 */
export class RoleGroup implements ProjectorHandle {
  constructor(
    readonly watcher: CheckpointWatcher,
    readonly runner?: LeasedRunner,
  ) {}

  get checkpoint(): number {
    return this.watcher.checkpoint;
  }

  waitFor(position: number, timeoutMs?: number): Promise<boolean> {
    return this.watcher.waitFor(position, timeoutMs);
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
    await this.watcher.stop();
  }
}

const roleGroup = async (
  runs: boolean,
  events: EventStore<EnvironmentEvent>,
  reads: ReadStore,
  group: GroupDefinition,
  options: EmbeddedOptions,
  logger: Logger,
): Promise<RoleGroup> => {
  const watcher = await new CheckpointWatcher(reads, group.checkpoint).start();
  if (!runs) return new RoleGroup(watcher);
  const lease = new Lease({
    store: reads,
    name: group.name,
    holder: leaseHolder(options),
    clock: options.clock,
    ttlMs: options.leases?.ttlMs,
  });
  const runner = new LeasedRunner(lease, { start: (fenced) => startGroup(events, fenced, group, logger) }, logger);
  await runner.start(options.leases?.timers ?? true);
  return new RoleGroup(watcher, runner);
};

/** How often the `dispatcher` role reads the deliveries store for new deliveries and the API's changes (resend, recover, test events). */
const DISPATCHER_REFILL_MS = 1_000;

/** The readiness probes of each environment in a process role other than `all` (leases, the bus). */
const roleProbes = new WeakMap<EnvContext, ReadinessProbe[]>();

/** The leased webhook work (publisher or dispatcher) of each environment in those roles. */
const webhookRunners = new WeakMap<EnvContext, LeasedRunner>();

/** The environment's leased webhook publisher or dispatcher, in the `publisher` and `dispatcher` roles. */
export const webhookRunnerOf = (ctx: EnvContext): LeasedRunner | undefined => webhookRunners.get(ctx);

/** Ready while this process holds the lease or could take it now (a stand-by behind a live holder is not). */
const leaseProbe = (check: string, runner: LeasedRunner): ReadinessProbe => ({
  check,
  probe: async () => (runner.active || (await runner.lease.available()) ? undefined : 'held by another process'),
});

/**
 * Webhooks in a role other than `all`: every role reads deliveries from the webhooks store; the
 * API's changes are written there and picked up by the `dispatcher` role's next refill. The
 * `publisher` role runs the publisher under the lease `publisher` (log → deliveries, or → the
 * environment's topic with a bus); the `dispatcher` role runs the attempts under the lease
 * `dispatcher`, reading new deliveries from the store every second, or, with a bus, consuming the
 * topic as a group into the store first. Both write through the fenced store (refused once
 * another process holds the lease). Resolves with the role's readiness probes.
 */
const startRoleWebhooks = async (
  ctx: EnvContext,
  store: ReadStore,
  role: Exclude<Role, 'all'>,
  settings: WebhookSettings,
  hooks: WebhookHooks,
  options: EmbeddedOptions,
  logger: Logger,
): Promise<ReadinessProbe[]> => {
  const deliveries = new DeliveryStore(deliveryStorageOf(store));
  const runs = role === 'publisher' || role === 'dispatcher';
  const probes: ReadinessProbe[] = [];
  const ownBus =
    !runs || options.webhookBus || !options.kafka ? undefined : createBus(options.kafka, kafkaLogTo(logger));
  const bus = runs ? (options.webhookBus ?? ownBus) : undefined;
  let busUp = ownBus === undefined;
  if (ownBus) {
    probes.push({ check: `${ctx.environment}.bus`, probe: async () => (busUp ? undefined : 'not connected') });
    void ownBus.start([ctx.environment]).then(
      () => (busUp = true),
      (error: unknown) => logger.error({ err: error }, 'kafka: could not connect'),
    );
  }
  const lease = runs
    ? new Lease({
        store,
        name: role,
        holder: leaseHolder(options),
        clock: options.clock,
        ttlMs: options.leases?.ttlMs,
      })
    : undefined;
  const work = (): Promise<{ stop(): Promise<void> }> => {
    // every write of this tenure fenced on the lease, deliveries and the other collections alike
    const leased = deliveries.fenced(() => lease!.fenced({}).fence!);
    return role === 'publisher' ? startPublisher(leased) : startDispatcher(leased);
  };
  const startPublisher = async (leased: DeliveryStore) => {
    // the dispatcher (another process) reads the new deliveries from the store
    const publisher = new WebhookPublisher(ctx.events, leased, ctx.environment, () => {}, {
      logger,
      bus,
      snapshots: ctx.snapshots,
    });
    await publisher.start();
    return { stop: () => publisher.stop() };
  };
  const startDispatcher = async (leased: DeliveryStore) => {
    const dispatcher = newDispatcher(ctx, leased, settings, hooks, logger);
    const fromBus = bus
      ? new BusDeliveries(bus, leased, ctx.environment, (made) => dispatcher.enqueue(made), logger)
      : undefined;
    await leased.start();
    void fromBus?.start(); // joins in the background
    dispatcher.start();
    const refill = setInterval(() => dispatcher.wake(true), DISPATCHER_REFILL_MS);
    refill.unref();
    return {
      stop: async () => {
        clearInterval(refill);
        await fromBus?.stop();
        await dispatcher.stop();
      },
    };
  };
  let runner: LeasedRunner | undefined;
  if (lease) {
    runner = new LeasedRunner(lease, { start: work }, logger);
    webhookRunners.set(ctx, runner);
    await runner.start(options.leases?.timers ?? true);
    probes.push(leaseProbe(`${ctx.environment}.lease.${role}`, runner));
  }
  Object.assign(ctx.webhooks, {
    deliveries,
    control: localDeliveryControl(deliveries, { wake: () => {} }),
    stop: async () => {
      await runner?.stop();
      await ownBus?.close();
      await store.close();
    },
  });
  return probes;
};

/**
 * What `/readyz` checks in each process role (decision 056): `api` every store and the core
 * group's lag from its stored checkpoint; `projector` the event store and both read stores, the
 * stored lag, and its leases; `publisher` the event store, the deliveries store, its lease and the
 * bus; `dispatcher` the deliveries store, its lease and the bus. `all`: undefined (every store
 * and the core group this process runs).
 */
export const roleReadiness = (role: Role): RoleReadiness | undefined => {
  const probes = (ctx: EnvContext) => roleProbes.get(ctx) ?? [];
  const coreCheckpoint = (ctx: EnvContext) => ctx.reads.getCheckpoint(CORE_GROUP.checkpoint);
  switch (role) {
    case 'all':
      return undefined;
    case 'api':
      return { stores: ['events', 'reads', 'analytics_reads', 'kv', 'webhooks'], coreCheckpoint };
    case 'projector':
      return { stores: ['events', 'reads', 'analytics_reads'], coreCheckpoint, probes };
    case 'publisher':
      return { stores: ['events', 'webhooks'], probes };
    case 'dispatcher':
      return { stores: ['webhooks'], probes };
  }
};

/** How createApp serves a process role: the API only in `all` and `api`; the role's `/readyz` checks. */
export const appRoleOptions = (role: Role): { opsOnly: boolean; readiness?: RoleReadiness } => ({
  opsOnly: role !== 'all' && role !== 'api',
  readiness: roleReadiness(role),
});

/** The projection groups' checkpoints as stored in the read stores (`projector_lag` in a role other than `all`). */
export const storedCheckpoints = async (ctx: EnvContext): Promise<Array<[string, number]>> => [
  ['core', await ctx.reads.getCheckpoint(CORE_GROUP.checkpoint)],
  ['analytics', await ctx.analyticsReads.getCheckpoint(ANALYTICS_GROUP.checkpoint)],
  ...(ctx.webhooks.deliveries
    ? [['webhooks', await ctx.webhooks.deliveries.store.getCheckpoint(PUBLISHER_CHECKPOINT)] as [string, number]]
    : []),
];

/**
 * The webhook threads run in Linux's idle scheduling class (decision 100), or at nice 10 where
 * they cannot: under saturation deliveries lag, then catch up (decision 032).
 */
const WEBHOOK_THREAD_IDLE = true;
const WEBHOOK_THREAD_NICE = 10;

/** The publisher and dispatcher of one environment on a worker thread; the main thread reads deliveries. */
const startWebhookThread = async (
  ctx: EnvContext,
  files: ReturnType<typeof environmentFiles>,
  settings: WebhookSettings,
  logLevel: string,
  logger: Logger,
  kafka: BusSettings | undefined,
): Promise<WebhookThread> => {
  const thread = await WebhookThread.start(
    {
      environment: ctx.environment,
      eventsFile: files.events,
      webhooksFile: files.webhooks,
      ...(ctx.snapshots instanceof SqliteSnapshotStore ? { snapshotsFile: files.snapshots } : {}),
      settings: {
        ...settings,
        allowedCidrs: settings.allowedCidrs.map(([address, bits]) => `${address.toString()}/${bits}`).join(','),
      },
      version: VERSION,
      logLevel,
      pollIntervalMs: 200,
      idle: WEBHOOK_THREAD_IDLE,
      nice: WEBHOOK_THREAD_NICE,
      mainThreadLoad: mainThreadLoad(),
      ...(kafka ? { kafka } : {}),
    },
    (endpointId, reason) => disableEndpoint(ctx, endpointId, reason),
    logger,
  );
  const deliveries = new DeliveryStore(deliveryStorageOf(SqliteReadStore.open(files.webhooks)));
  Object.assign(ctx.webhooks, {
    publisher: thread,
    deliveries,
    control: {
      resend: (...args) => thread.call('resend', ...args) as Promise<DeliveryDoc | null>,
      recover: (...args) => thread.call('recover', ...args) as Promise<number>,
      add: async (...args) => {
        await thread.call('add', ...args);
      },
      purge: (...args) => thread.call('purge', ...args) as Promise<number>,
    } satisfies DeliveryControl,
    stop: async () => {
      await thread.stop();
      await deliveries.close();
    },
  });
  return thread;
};

/** The dispatcher of one environment on this thread: attempts over HTTP, endpoints disabled through the command handler. */
const newDispatcher = (
  ctx: EnvContext,
  deliveries: DeliveryStore,
  settings: WebhookSettings,
  hooks: WebhookHooks,
  logger: Logger,
): WebhookDispatcher =>
  new WebhookDispatcher({
    deliveries,
    clock: ctx.clock,
    sender: createHttpSender(hooks.resolve),
    settings,
    version: VERSION,
    disable: (endpointId, reason) => disableEndpoint(ctx, endpointId, reason),
    random: hooks.random,
    scheduler: hooks.scheduler,
    logger,
  });

/** The publisher (fan-out from the log, own checkpoint) and the dispatcher (attempts) of one environment, on the main thread. */
const startWebhooks = async (
  ctx: EnvContext,
  store: ReadStore,
  settings: WebhookSettings,
  hooks: WebhookHooks,
  logger: Logger,
  buses: Pick<EmbeddedOptions, 'kafka' | 'webhookBus'>,
): Promise<void> => {
  // the publisher beside the dispatcher writes every endpoint copy, through this store
  const deliveries = new DeliveryStore(deliveryStorageOf(store)).cacheEndpoints();
  const ownBus = buses.webhookBus || !buses.kafka ? undefined : createBus(buses.kafka, kafkaLogTo(logger));
  const bus = buses.webhookBus ?? ownBus;
  await ownBus?.start([ctx.environment]);
  const dispatcher = newDispatcher(ctx, deliveries, settings, hooks, logger);
  const publisher = new WebhookPublisher(ctx.events, deliveries, ctx.environment, (made) => dispatcher.enqueue(made), {
    logger,
    bus,
    snapshots: ctx.snapshots,
    firstAttempts: dispatcher,
  });
  const fromBus = bus
    ? new BusDeliveries(bus, deliveries, ctx.environment, (made) => dispatcher.enqueue(made), logger)
    : undefined;
  await publisher.start();
  void fromBus?.start(); // joins in the background
  Object.assign(ctx.webhooks, {
    publisher,
    deliveries,
    control: localDeliveryControl(deliveries, dispatcher),
    stop: async () => {
      await fromBus?.stop();
      await dispatcher.stop();
      await publisher.stop();
      await ownBus?.close();
      await deliveries.close();
    },
  });
  dispatcher.start();
};

/**
 * Where `GET /metrics` counts each environment's pending and failed webhook deliveries: in its
 * deliveries store, whichever process makes the attempts.
 */
export const webhookQueues =
  (environments: Record<Environment, EnvContext>) =>
  async (environment: Environment): Promise<EndpointQueueStats[]> => {
    const deliveries = environments[environment].webhooks.deliveries;
    return deliveries ? webhookQueueStats(deliveries) : [];
  };

export const closeEnvironment = async (ctx: EnvContext): Promise<void> => {
  await ctx.orders.idle(); // confirmations still queued after their responses
  await ctx.vouchers.idle();
  // webhooks: attempts in flight are aborted and not recorded (made again after a restart)
  await ctx.webhooks.stop?.();
  await ctx.exports.stop();
  await ctx.telemetry.close();
  await ctx.analytics.stop();
  await ctx.projector.stop();
  await ctx.events.close();
  await ctx.reads.close();
  await ctx.analyticsReads.close();
  await ctx.kv.close();
  await ctx.snapshots?.close();
};

export interface Embedded {
  environments: Record<Environment, EnvContext>;
  keys: ApiKeyRegistry;
  account: Account;
  close(): Promise<void>;
}

/** The account's stores: API key events and the operator's settings, shared by every environment. */
export interface Account {
  events: EventStore<ApiKeyEvent>;
  kv: KvStore;
}

export const accountFiles = (dataDir: string) => ({
  events: path.join(dataDir, 'account', 'events.db'),
  kv: path.join(dataDir, 'account', 'state.db'),
});

/**
 * The account stores and the key registry loaded from them (used by the service and the keys CLI):
 * key events on EventStoreDB (namespace `account`) or in DATA_DIR/account/events.db, key-value
 * records on MongoDB (the shared database) or in DATA_DIR/account/state.db.
 */
export const openAccount = async (
  dataDir: string,
  clock: Clock,
  apiKeys: string[] = [],
  servers?: ServerStores,
  writer?: 'thread' | 'inline',
): Promise<{ account: Account; keys: ApiKeyRegistry }> => {
  const files = accountFiles(dataDir);
  const account = {
    events: openEventStore<ApiKeyEvent>(servers, 'account', files.events, { pollIntervalMs: 100, writer }),
    kv: (await servers?.mongo?.account()) ?? SqliteKvStore.open(files.kv, clock),
  };
  const keys = new ApiKeyRegistry(account.events, clock, account.kv);
  await keys.load(apiKeys);
  return { account, keys };
};

/** The whole service on embedded stores: both environments plus the account stores for keys. */
export const openEmbedded = async (options: EmbeddedOptions & { apiKeys?: string[] }): Promise<Embedded> => {
  const { account, keys } = await openAccount(
    options.dataDir,
    options.clock,
    options.apiKeys ?? [],
    options.servers,
    options.eventStoreWriter,
  );
  checkpointer.onCheckFailure = ({ file, code, message }) =>
    options.logger.error({ file, code, error: message }, 'a WAL checkpoint failed; the next check tries again');
  checkpointer.onFailure = (error, restartInMs) =>
    options.logger.error(
      { err: error, restart_in_ms: restartInMs },
      'the WAL checkpointer thread failed; another starts',
    );
  const following = followKeys(keys, options.logger);
  const sandbox = await openEmbeddedEnvironment('sandbox', options);
  const production = await openEmbeddedEnvironment('production', options);
  return {
    environments: { sandbox, production },
    keys,
    account,
    close: async () => {
      await following?.close();
      await closeEnvironment(sandbox);
      await closeEnvironment(production);
      await account.events.close();
      await account.kv.close();
      await checkpointer.settled(); // the files' last connections closed: nothing changes them after
    },
  };
};

/**
 * Keeps the key registry following the account store: when the subscription fails (a server
 * lost), it subscribes again after RESTART_DELAY_MS from the last event it applied.
 */
const followKeys = (keys: ApiKeyRegistry, logger: Logger): { close(): Promise<void> } => {
  let subscription: Subscription | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const follow = () => {
    if (closed) return;
    subscription = keys.follow((error) => {
      logger.error({ err: error }, 'key registry stopped following the account store; following again');
      timer = setTimeout(follow, RESTART_DELAY_MS);
      timer.unref();
    });
  };
  follow();
  return {
    close: async () => {
      closed = true;
      clearTimeout(timer);
      await subscription?.close();
    },
  };
};

/** One pass of housekeeping in an environment: expiries recorded, expired quotes and idempotency records removed, old webhook deliveries removed. */
const housekeep = async (ctx: EnvContext): Promise<void> => {
  await expireDueVouchers(ctx);
  await ctx.kv.purgeExpired(ctx.clock.now().getTime());
  await purgeDeliveries(ctx); // webhook deliveries that ended over 30 days ago
};

/**
 * Every `intervalMs`: records voucher expiries (the status already reads `expired` at once) and
 * removes expired key-value records (reads already ignore them; this keeps the file from growing).
 */
export const startExpiryJob = (environments: EnvContext[], intervalMs: number, logger: Logger): (() => void) => {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void Promise.all(environments.map(housekeep))
      .catch((error: unknown) => logger.error({ err: error }, 'expiry job failed'))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
};
