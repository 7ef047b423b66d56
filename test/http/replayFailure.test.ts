/**
 * `npm run replay` rebuilds an environment's projection groups on threads of their own: when one
 * group's rebuild fails, the replay fails (exit 1) and names the group and the cause.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { environmentFiles } from '../../src/composition.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { voucherCreated } from '../fixtures/events.ts';
import { exitWithin, killAll, run } from '../support/processes.ts';

describe('npm run replay when a group cannot be rebuilt', function () {
  this.timeout(90_000);
  let dataDir: string;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-failure-'));
    const files = environmentFiles(dataDir, 'sandbox');
    const events = SqliteEventStore.open(files.events);
    try {
      const event = voucherCreated();
      await events.appendToStream('voucher-v_1', [{ type: event.type, data: event.data as Record<string, unknown> }]);
    } finally {
      await events.close();
    }
    // The analytics group's read store cannot be opened: a directory where its file goes.
    fs.mkdirSync(files.analytics, { recursive: true });
  });
  after(async () => {
    await killAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('exits 1 naming the group', async () => {
    const replay = run(['scripts/replay.ts', '--env', 'sandbox'], { DATA_DIR: dataDir });
    const result = await exitWithin(replay, 60_000);
    expect(result.code, replay.output()).to.equal(1);
    expect(replay.output()).to.match(/^replay failed: analytics group: /m);
    expect(replay.output()).not.to.include('sandbox: replayed');
  });
});
