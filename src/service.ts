import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  appRoleOptions,
  openEmbedded,
  openServers,
  startExpiryJob,
  storedCheckpoints,
  webhookQueues,
} from './composition.ts';
import { loadConfig } from './config.ts';
import { systemClock } from './domain/clock.ts';
import { listenBaseUrl } from './http/addresses.ts';
import { createApp } from './http/createApp.ts';
import { createHttpServer, warnOnDroppedConnections } from './http/server.ts';
import { warmUp, WarmUpKey } from './http/warmUp.ts';
import { lockDataDir } from './infrastructure/dataDirLock.ts';
import { limitHeapGrowth } from './infrastructure/heapGrowth.ts';
import { createLogger } from './logger.ts';
import type { ApiKeyRegistry } from './application/apiKeys.ts';
import { AdminAuth } from './application/adminAuth.ts';
import { showWelcome, type FirstKeys } from './welcome.ts';
import { ServiceMetrics } from './http/metrics.ts';

/** Hooks for code that starts the service itself (tests); the configuration comes from the environment. */
export interface ServiceHooks {
  /** Awaited before each export job starts (see ExportJobsDeps.beforeJob). */
  beforeExportJob?: (exportId: string) => Promise<void>;
}

/** The composition root: reads the configuration, builds the adapters, serves, shuts down on SIGTERM/SIGINT. */
export const runService = async (hooks: ServiceHooks = {}): Promise<void> => {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  limitHeapGrowth(config.heapGrowingPercent);
  // One process per DATA_DIR: a second service, or a replay, is refused while this one runs.
  let stopping = false;
  const lock = lockDataDir(config.dataDir, 'voucher service', systemClock);
  const metrics = config.metrics ? new ServiceMetrics({ defaultMetrics: true }) : undefined;
  // EVENTSTORE_URL, MONGODB_URL: checked here, a server that does not answer stops the start.
  const servers = await openServers(config, systemClock);
  const service = await openEmbedded({
    servers,
    role: config.role,
    dataDir: config.dataDir,
    clock: systemClock,
    logger,
    apiKeys: config.apiKeys,
    readYourWritesMs: config.readYourWritesMs,
    projectors: config.projectors,
    quotas: config.quotas,
    webhooks: config.webhooks,
    applyMode: config.applyMode,
    webhookDelivery: config.webhookDelivery,
    eventStoreWriter: config.eventStoreWriter,
    projectorGatherMs: config.projectorGatherMs,
    snapshotWriter: config.snapshotWriter,
    snapshotGatherMs: config.snapshotGatherMs,
    snapshotEvery: config.snapshotEvery,
    kafka: config.kafka,
    beforeExportJob: hooks.beforeExportJob,
    onAppend: metrics ? (environment, seconds) => metrics.appended(environment, seconds) : undefined,
  });
  metrics?.observe({
    environments: service.environments,
    webhookQueues: webhookQueues(service.environments),
    // in a role other than `all` the groups run in another process: their lag is read from the stores
    storedCheckpoints: config.role === 'all' ? undefined : storedCheckpoints,
    logger,
  });
  // the first keys are made by a process that serves the API (ROLE all or api), not by the other roles
  const servesApi = config.role === 'all' || config.role === 'api';
  const firstKeys = servesApi && service.keys.size === 0 ? await createFirstKeys(service.keys) : undefined;
  // ADMIN_PASSWORD wins; else the stored hash; else a new password, shown once below (never logged)
  const admin = await AdminAuth.open(service.account.kv, config.adminPassword);
  // PUBLIC_BASE_URL, else the listen address (its port known once listening: PORT=0 picks one)
  let publicBaseUrl = config.publicBaseUrl ?? listenBaseUrl(config.host, config.port);
  // the first requests of a process are several times slower than the next: a few answered before it listens (warmUp.ts)
  const warmUpKey = servesApi ? new WarmUpKey() : undefined;
  const app = createApp({
    environments: service.environments,
    keys: service.keys,
    logger,
    rateLimits: config.rateLimits,
    rateLimitStores: await servers.mongo?.rateLimitStores(),
    admin: admin.auth,
    trustProxy: config.trustProxy,
    publicBaseUrl: () => publicBaseUrl,
    metrics,
    ops: config.ops,
    stopping: () => stopping,
    ...appRoleOptions(config.role),
    warmUpKey,
  });
  /** Secrets to a terminal, or to a 0600 file in DATA_DIR; never to the log (welcome.ts). */
  const welcome = (root: string) =>
    showWelcome(
      { root, firstKeys, adminPassword: admin.generated },
      { stdout: process.stdout, stderr: process.stderr, dataDir: config.dataDir, logger },
    );
  const stopExpiry = startExpiryJob(Object.values(service.environments), config.expiryIntervalMs, logger);
  const server: Server = createHttpServer(app, config.server);
  if (warmUpKey) {
    const ms = await warmUp(server, warmUpKey, logger);
    logger.info({ duration_ms: Math.round(ms) }, 'request path warmed up');
  }
  warnOnDroppedConnections(server, (fields, message) => logger.warn(fields, message));
  try {
    await listen(server, config.port, config.host);
  } catch (error) {
    // Keys made by this first start exist only as hashes: show them even though it stops here.
    if (firstKeys || admin.generated) welcome(publicBaseUrl);
    throw error; // "failed to start: listen EADDRINUSE …", exit 1
  }
  const { port } = server.address() as AddressInfo;
  publicBaseUrl = config.publicBaseUrl ?? listenBaseUrl(config.host, port);
  // the pid to send SIGTERM to (npm start's own pid works too: its script execs node)
  logger.info({ port, data_dir: config.dataDir, pid: process.pid }, 'voucher service listening');
  welcome(publicBaseUrl);

  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stopExpiry();
    server.close(() => {
      void service
        .close()
        .then(servers.close)
        .then(
          () => {
            lock.release();
            process.exit(0);
          },
          (error: unknown) => {
            logger.error({ err: error }, 'shutdown failed');
            process.exit(1);
          },
        );
    });
    server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
};

/** Resolves once the server listens; rejects with the server's error (a port in use, say). */
const listen = (server: Server, port: number, host: string): Promise<void> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });

const createFirstKeys = async (keys: ApiKeyRegistry): Promise<FirstKeys> => ({
  sandbox: (await keys.create('sandbox', 'First sandbox key', undefined, 'first start')).key,
  production: (await keys.create('production', 'First production key', undefined, 'first start')).key,
});

/** Reports why the service could not start and exits with 1. */
export const failedToStart = (error: unknown): never => {
  process.stderr.write(`voucher service failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
};
