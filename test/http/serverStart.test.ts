/**
 * A server named by EVENTSTORE_URL or MONGODB_URL that does not answer stops the service at
 * start: a real service process pointed at 127.0.0.1:9 (nothing listens there) exits with 1 and
 * one line naming the variable, without a stack trace and without the URL's credentials.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { exitWithin, freePort, run } from '../support/processes.ts';

describe('start-up with an unreachable server', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  after(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

  const start = async (env: Record<string, string>) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-servers-'));
    dirs.push(dataDir);
    const proc = run(['src/main.ts'], {
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...env,
    });
    const { code } = await exitWithin(proc, 45_000);
    return { code, output: proc.output() };
  };

  const expectClearStop = (result: { code: number | null; output: string }, line: RegExp) => {
    expect(result.code, result.output).to.equal(1);
    expect(result.output).to.match(line);
    expect(result.output, 'no stack trace').to.not.match(/^\s+at /m);
    expect(result.output, 'no password').to.not.include('s3cret');
    expect(result.output).to.not.include('voucher service listening');
  };

  it('EVENTSTORE_URL: "voucher service failed to start: EventStoreDB at EVENTSTORE_URL (…) cannot be reached"', async () => {
    const result = await start({ EVENTSTORE_URL: 'esdb://admin:s3cret@127.0.0.1:9?tls=false' });
    expectClearStop(
      result,
      /^voucher service failed to start: EventStoreDB at EVENTSTORE_URL \(.*\) cannot be reached/m,
    );
  });

  it('MONGODB_URL: "voucher service failed to start: MONGODB_URL: cannot reach the MongoDB server"', async () => {
    const result = await start({
      MONGODB_URL: 'mongodb://u:s3cret@127.0.0.1:9/vouchers?replicaSet=rs0&serverSelectionTimeoutMS=1000',
    });
    expectClearStop(result, /^voucher service failed to start: MONGODB_URL: cannot reach the MongoDB server/m);
  });
});
