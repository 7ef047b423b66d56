import type { Server } from 'node:http';
import { openEmbedded, startExpiryJob } from './composition.ts';
import { loadConfig } from './config.ts';
import { systemClock } from './domain/clock.ts';
import { createApp } from './http/createApp.ts';
import { createHttpServer, warnOnDroppedConnections } from './http/server.ts';
import { createLogger } from './logger.ts';
import type { ApiKeyRegistry } from './application/apiKeys.ts';
import { AdminAuth } from './application/adminAuth.ts';

/** Hooks for code that starts the service itself (tests); the configuration comes from the environment. */
export interface ServiceHooks {
  /** Awaited before each export job starts (see ExportJobsDeps.beforeJob). */
  beforeExportJob?: (exportId: string) => Promise<void>;
}

/** The composition root: reads the configuration, builds the adapters, serves, shuts down on SIGTERM/SIGINT. */
export const runService = async (hooks: ServiceHooks = {}): Promise<void> => {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const service = await openEmbedded({
    dataDir: config.dataDir,
    clock: systemClock,
    logger,
    apiKeys: config.apiKeys,
    readYourWritesMs: config.readYourWritesMs,
    projectors: config.projectors,
    beforeExportJob: hooks.beforeExportJob,
  });
  const firstKeys = service.keys.size === 0 ? await createFirstKeys(service.keys) : undefined;
  // ADMIN_PASSWORD wins; else the stored hash; else a new password, printed once below (never logged)
  const admin = await AdminAuth.open(service.account.kv, config.adminPassword);
  const app = createApp({
    environments: service.environments,
    keys: service.keys,
    logger,
    rateLimits: config.rateLimits,
    admin: admin.auth,
  });
  const stopExpiry = startExpiryJob(Object.values(service.environments), config.expiryIntervalMs, logger);
  const server: Server = createHttpServer(app, config.server);
  warnOnDroppedConnections(server, (fields, message) => logger.warn(fields, message));
  try {
    await listen(server, config.port, config.host);
  } catch (error) {
    // Keys made by this first start exist only as hashes: show them even though it stops here.
    if (firstKeys || admin.generated) printWelcome(config.port, firstKeys, admin.generated);
    throw error; // "failed to start: listen EADDRINUSE …", exit 1
  }
  logger.info({ port: config.port, data_dir: config.dataDir }, 'voucher service listening');
  printWelcome(config.port, firstKeys, admin.generated);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stopExpiry();
    server.close(() => {
      void service.close().then(
        () => process.exit(0),
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

const createFirstKeys = async (keys: ApiKeyRegistry) => ({
  sandbox: (await keys.create('sandbox', 'First sandbox key', undefined, 'first start')).key,
  production: (await keys.create('production', 'First production key', undefined, 'first start')).key,
});

/** Keys and the generated dashboard password are printed once, to the terminal, never to the log. */
const printWelcome = (
  port: number,
  firstKeys: { sandbox: string; production: string } | undefined,
  adminPassword?: string,
): void => {
  const base = `http://localhost:${port}/v1`;
  const lines = firstKeys
    ? [
        'First start: these API keys were created. They are shown only now and stored only as hashes:',
        `  sandbox     ${firstKeys.sandbox}`,
        `  production  ${firstKeys.production}`,
        '',
        `Try:  curl -H "Authorization: Bearer ${firstKeys.sandbox}" ${base}/vouchers`,
      ]
    : [
        `Voucher service on ${base} (API reference: ${base}/openapi.json).`,
        'API keys were printed on the first start. Lost them? Start with VOUCHER_API_KEYS=sk_test_<32 letters or digits>',
        'to accept a key of your own choosing, or use a fresh DATA_DIR to get new keys.',
      ];
  const dashboard = `http://localhost:${port}/dashboard`;
  lines.push(
    '',
    ...(adminPassword
      ? [
          `Dashboard (API keys): ${dashboard}`,
          `  operator password  ${adminPassword}`,
          'Shown only now and stored only as a hash. Set ADMIN_PASSWORD to choose your own instead.',
        ]
      : [`Dashboard (API keys): ${dashboard} (password: printed on the first start, or ADMIN_PASSWORD)`]),
  );
  process.stdout.write(`\n${'='.repeat(78)}\n${lines.join('\n')}\n${'='.repeat(78)}\n\n`);
};

/** Reports why the service could not start and exits with 1. */
export const failedToStart = (error: unknown): never => {
  process.stderr.write(`voucher service failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
};
