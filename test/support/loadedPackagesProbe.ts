/**
 * Which of the optional packages (the clients of the servers, exceljs, and the webhook sender's
 * HTTP client) a service on the embedded stores has loaded: opens the embedded service (both
 * environments, their projector and webhook threads) on a temporary DATA_DIR, prints the loaded
 * ones as a JSON array, and closes it. Run in a child process of its own
 * (test/unit/lazyPackages.test.ts), so that nothing else has loaded them.
 */
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbedded } from '../../src/composition.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createLogger } from '../../src/logger.ts';

const PACKAGES = ['mongodb', '@eventstore/db-client', 'kafkajs', 'exceljs', 'undici'];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'loaded-packages-'));
const service = await openEmbedded({ dataDir, clock: systemClock, logger: createLogger('silent') });
const loaded = Object.keys(createRequire(import.meta.url).cache);
await service.close();
fs.rmSync(dataDir, { recursive: true, force: true });
process.stdout.write(
  `${JSON.stringify(PACKAGES.filter((name) => loaded.some((file) => file.includes(`/node_modules/${name}/`))))}\n`,
);
