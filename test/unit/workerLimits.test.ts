import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import pino from 'pino';
import { spawnWorker, SupervisedWorker, WORKER_RESOURCE_LIMITS } from '../../src/infrastructure/supervisedWorker.ts';

/** The worker's own view of its V8 limits, as it reports them. */
const limitsSeenBy = async (file: string): Promise<Record<string, number>> => {
  const worker = spawnWorker(pathToFileURL(file), {});
  try {
    return await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  } finally {
    await worker.terminate();
  }
};

describe('worker threads: V8 limits (decision 077)', () => {
  let dir: string;
  const source =
    "import { parentPort, resourceLimits } from 'node:worker_threads';\nparentPort.postMessage(resourceLimits);\n";

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-limits-'));
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('caps the young generation at 4 MB', () => {
    expect(WORKER_RESOURCE_LIMITS.maxYoungGenerationSizeMb).to.equal(4);
  });

  it('a compiled worker (.js) runs with the cap', async () => {
    const file = path.join(dir, 'limits.mjs');
    fs.writeFileSync(file, source);
    expect((await limitsSeenBy(file)).maxYoungGenerationSizeMb).to.equal(4);
  });

  it('a worker run from the .ts sources runs with the cap', async () => {
    const file = path.join(dir, 'limits.ts');
    fs.writeFileSync(file, source);
    expect((await limitsSeenBy(file)).maxYoungGenerationSizeMb).to.equal(4);
  });

  describe('a supervised thread', () => {
    type Ready = { type: 'ready'; limits: Record<string, number> };
    const supervisedLimits = async (resourceLimits?: { maxYoungGenerationSizeMb: number }) => {
      const file = path.join(dir, 'supervised.mjs');
      fs.writeFileSync(
        file,
        "import { parentPort, resourceLimits } from 'node:worker_threads';\n" +
          "parentPort.postMessage({ type: 'ready', limits: resourceLimits });\n" +
          "parentPort.on('message', (m) => { if (m === 'stop') process.exit(0); });\n",
      );
      let seen: Record<string, number> | undefined;
      const thread = new SupervisedWorker<Ready, string>({
        url: pathToFileURL(file),
        workerData: { environment: 'sandbox' },
        name: 'test thread',
        logger: pino({ level: 'silent' }),
        onMessage: (message) => (seen = message.limits),
        ...(resourceLimits ? { resourceLimits } : {}),
      });
      await thread.start();
      await thread.stop('stop');
      return seen!;
    };

    it('runs with the cap unless given limits of its own', async () => {
      expect((await supervisedLimits()).maxYoungGenerationSizeMb).to.equal(4);
    });

    it('runs with the limits it is given (the webhook thread, decision 096)', async () => {
      expect((await supervisedLimits({ maxYoungGenerationSizeMb: 32 })).maxYoungGenerationSizeMb).to.equal(32);
    });
  });
});
