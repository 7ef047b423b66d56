import path from 'node:path';
import type { Logger } from 'pino';
import { ANALYTICS_GROUP, CORE_GROUP } from './projections/index.ts';
import { ApiKeyRegistry, type ApiKeyEvent } from './application/apiKeys.ts';
import type { EnvironmentEvent } from './application/events.ts';
import { CodeRegistry } from './application/codeRegistry.ts';
import { CommandHandler } from './core/commandHandler.ts';
import type { EnvContext, Environment } from './application/context.ts';
import { ExportJobs } from './application/exports/jobs.ts';
import { DEFAULT_QUOTAS, type Quotas } from './application/quotas.ts';
import { randomIds, type IdGenerator } from './application/ids.ts';
import { AttemptRecorder } from './application/telemetry.ts';
import { expireDueVouchers } from './application/vouchers.ts';
import type { Clock } from './domain/clock.ts';
import type { VoucherEvent } from './domain/voucher/events.ts';
import { voucherDecider } from './domain/voucher/decide.ts';
import type { VoucherCommand } from './domain/voucher/commands.ts';
import { DomainError } from './domain/errors.ts';
import type { VoucherState } from './domain/voucher/state.ts';
import type { OrderEvent } from './domain/order/events.ts';
import { orderDecider, type OrderCommand } from './domain/order/decide.ts';
import type { OrderState } from './domain/order/state.ts';
import { SqliteEventStore } from './infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteKvStore } from './infrastructure/kvStore/sqliteKvStore.ts';
import type { ProjectorHandle } from './core/projectionRunner.ts';
import { ProjectorThread } from './infrastructure/projector/projectorThread.ts';
import { startGroup } from './core/projectionGroups.ts';
import { SqliteReadStore } from './infrastructure/readStore/sqliteReadStore.ts';
// --- webhooks ---
import { endpointDecider, type EndpointCommand, type EndpointState } from './domain/webhooks/endpoint.ts';
import type { WebhookEndpointEvent } from './domain/webhooks/events.ts';
import { defaultWebhookSettings, type WebhookSettings } from './application/webhooks/settings.ts';
import { DeliveryStore } from './application/webhooks/deliveryStore.ts';
import { WebhookPublisher } from './application/webhooks/publisher.ts';
import { WebhookDispatcher, type Scheduler } from './application/webhooks/dispatcher.ts';
import { disableEndpoint } from './application/webhooks/endpoints.ts';
import { purgeDeliveries } from './application/webhooks/deliveries.ts';
import { createHttpSender, type Resolve } from './infrastructure/webhooks/httpSender.ts';
import fs from 'node:fs';

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
   * always runs on the main thread.
   */
  projectors?: 'thread' | 'inline';
  /** Per-API-key quotas on stored quotes and exports (default DEFAULT_QUOTAS). */
  quotas?: Quotas;
  /** Webhook delivery settings (WEBHOOK_*; default: defaultWebhookSettings). */
  webhooks?: WebhookSettings;
  /** Test seams of webhook delivery (DNS, jitter, timers). */
  webhookHooks?: WebhookHooks;
}

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
  // The rows of each commit are handed to the projector thread.
  const events = SqliteEventStore.open<EnvironmentEvent>(files.events, {
    onCommitted: (committed) => thread?.committed(committed),
  });
  const { core: reads, analytics: analyticsReads } = openReadStores(files);
  const kv = SqliteKvStore.open(files.kv, options.clock, { relaxedNamespaces: ['quotes'] }); // quotes can be recomputed
  // The core group (what a write's response waits for: read-your-writes) runs here, so that it
  // folds a commit in the same turn; the heavier analytics group runs on the projector thread.
  const projector = await startGroup(events, reads, CORE_GROUP, logger);
  let analytics: ProjectorHandle;
  if ((options.projectors ?? 'thread') === 'thread') {
    thread = await ProjectorThread.start(
      {
        environment,
        groups: [ANALYTICS_GROUP.name],
        eventsFile: files.events,
        readsFile: files.analytics,
        logLevel: options.logger.level,
        pollIntervalMs: 200,
      },
      logger,
    );
    analytics = thread.group(ANALYTICS_GROUP.name);
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
    projector,
    clock: options.clock,
    ids: options.ids ?? randomIds,
    vouchers: new CommandHandler<VoucherCommand, VoucherEvent, VoucherState, EnvironmentEvent>(events, voucherDecider, {
      conflictError: () =>
        new DomainError(
          'CONCURRENT_MODIFICATION',
          'The voucher is being changed by another writer; retry the request',
          {},
        ),
    }),
    orders: new CommandHandler<OrderCommand, OrderEvent, OrderState, EnvironmentEvent>(events, orderDecider, {
      conflictError: () =>
        new DomainError(
          'CONCURRENT_MODIFICATION',
          'The order is being changed by another writer; retry the request',
          {},
        ),
    }),
    codes: new CodeRegistry(events),
    readYourWritesMs: options.readYourWritesMs ?? 5_000,
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
  await startWebhooks(ctx, files.webhooks, webhookSettings, options.webhookHooks ?? {}, logger);
  return ctx;
};

/** The publisher (fan-out from the log, own checkpoint) and the dispatcher (attempts) of one environment. */
const startWebhooks = async (
  ctx: EnvContext,
  file: string,
  settings: WebhookSettings,
  hooks: WebhookHooks,
  logger: Logger,
): Promise<void> => {
  const deliveries = new DeliveryStore(SqliteReadStore.open(file));
  const dispatcher = new WebhookDispatcher({
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
  const publisher = new WebhookPublisher(
    ctx.events,
    deliveries,
    ctx.environment,
    (made) => dispatcher.enqueue(made),
    logger,
  );
  await publisher.start();
  Object.assign(ctx.webhooks, { publisher, deliveries, dispatcher });
  dispatcher.start();
};

export const closeEnvironment = async (ctx: EnvContext): Promise<void> => {
  await ctx.orders.idle(); // confirmations still queued after their responses
  await ctx.vouchers.idle();
  // webhooks: attempts in flight are aborted and not recorded (made again after a restart)
  await ctx.webhooks.dispatcher?.stop();
  await ctx.webhooks.publisher?.stop();
  await ctx.webhooks.deliveries?.store.close();
  await ctx.exports.stop();
  await ctx.telemetry.close();
  await ctx.analytics.stop();
  await ctx.projector.stop();
  await ctx.events.close();
  await ctx.reads.close();
  await ctx.analyticsReads.close();
  await ctx.kv.close();
};

export interface Embedded {
  environments: Record<Environment, EnvContext>;
  keys: ApiKeyRegistry;
  account: Account;
  close(): Promise<void>;
}

/** The account's stores: API key events and the operator's settings, shared by every environment. */
export interface Account {
  events: SqliteEventStore<ApiKeyEvent>;
  kv: SqliteKvStore;
}

export const accountFiles = (dataDir: string) => ({
  events: path.join(dataDir, 'account', 'events.db'),
  kv: path.join(dataDir, 'account', 'state.db'),
});

/** The account stores and the key registry loaded from them (used by the service and the keys CLI). */
export const openAccount = async (
  dataDir: string,
  clock: Clock,
  apiKeys: string[] = [],
): Promise<{ account: Account; keys: ApiKeyRegistry }> => {
  const files = accountFiles(dataDir);
  const account = {
    events: SqliteEventStore.open<ApiKeyEvent>(files.events, { pollIntervalMs: 100 }),
    kv: SqliteKvStore.open(files.kv, clock),
  };
  const keys = new ApiKeyRegistry(account.events, clock, account.kv);
  await keys.load(apiKeys);
  return { account, keys };
};

/** The whole service on embedded stores: both environments plus the account stores for keys. */
export const openEmbedded = async (options: EmbeddedOptions & { apiKeys?: string[] }): Promise<Embedded> => {
  const { account, keys } = await openAccount(options.dataDir, options.clock, options.apiKeys ?? []);
  const following = keys.follow((error) =>
    options.logger.error({ err: error }, 'key registry stopped following the account store'),
  );
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
