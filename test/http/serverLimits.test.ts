/**
 * The service as `npm start` runs it (src/main.ts) applies the HTTP_* limits of its environment:
 * a connection that sends nothing and a body that trickles in are cut off, and connections beyond
 * HTTP_MAX_CONNECTIONS are refused. Small values keep it quick; every wait is bounded.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startService, type RunningService } from '../support/processes.ts';
import { stopProcess } from '../../scripts/lib/processes.ts';
import { connect, outcome, trickle } from '../support/sockets.ts';

const KEY = 'sk_test_ServerLimitsKey00000000000000001';
const WAIT_MS = 5_000;

describe('HTTP server limits of the running service', function () {
  this.timeout(60_000);
  let service: RunningService;
  let port: number;
  let dataDir: string;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-limits-'));
    service = await startService({
      VOUCHER_API_KEYS: KEY,
      ADMIN_PASSWORD: 'server-limits-test-password',
      DATA_DIR: dataDir,
      HTTP_HEADERS_TIMEOUT_MS: '300',
      HTTP_REQUEST_TIMEOUT_MS: '800',
      HTTP_IDLE_TIMEOUT_MS: '2000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '100',
      HTTP_MAX_CONNECTIONS: '4',
    });
    port = Number(new URL(service.base).port);
  });
  after(async () => {
    if (service) await stopProcess(service.proc);
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 408 and closes a connection that sends nothing', async () => {
    const result = await outcome(await connect(port), WAIT_MS);
    expect(result.closed).to.equal(true);
    expect(result.data).to.match(/^HTTP\/1\.1 408 /);
  });

  it('cuts off a validate body that trickles in', async () => {
    const socket = await connect(port);
    socket.write(
      `POST /v1/vouchers/validate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"code":',
    );
    trickle(socket, 50, ' ');
    const result = await outcome(socket, WAIT_MS);
    expect(result.closed).to.equal(true);
    expect(result.data).to.match(/^HTTP\/1\.1 408 /);
  });

  it('refuses connections beyond HTTP_MAX_CONNECTIONS, and serves once they are gone', async () => {
    // six at once against a cap of four: at most four are served, the others closed unanswered
    const sockets = await Promise.all(Array.from({ length: 6 }, () => connect(port)));
    const results = await Promise.all(
      sockets.map((socket) => {
        socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        return outcome(socket, WAIT_MS);
      }),
    );
    const served = results.filter((r) => r.data.startsWith('HTTP/1.1 200 ')).length;
    const refused = results.filter((r) => r.closed && r.data === '').length;
    expect(served + refused).to.equal(6);
    expect(served).to.be.within(1, 4);
    expect(refused).to.be.at.least(2);
    const res = await fetch(`${service.base}/health`, { headers: { Connection: 'close' } });
    expect(res.status).to.equal(200);
  });
});
