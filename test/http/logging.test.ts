import { Writable } from 'node:stream';
import zlib from 'node:zlib';
import { expect } from 'chai';
import { createLogger } from '../../src/logger.ts';
import { checkpointer } from '../../src/infrastructure/sqliteWal.ts';
import { validateBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { PRODUCTION_KEY, SANDBOX_KEY, TestService } from '../support/harness.ts';

/** Request logging: one JSON line per request, with its id, status and duration, and never a key. */
describe('request logging', () => {
  let service: TestService;
  let lines: string[];

  before(async () => {
    lines = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    service = await TestService.start({ logger: createLogger('info', sink) });
  });
  after(async () => {
    await service.stop();
  });

  const requestLines = () =>
    lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' || l.msg === 'request failed');

  it('writes one line per request with request id, method, path, status, duration and key id', async () => {
    const created = await service.post('/v1/vouchers', fixedVoucher('LOGGED1'), {
      headers: { 'X-Request-Id': 'req-log-1' },
    });
    expect(created.status).to.equal(201);
    await service.post('/v1/vouchers/validate', validateBody('nope', { value: 1 }), {
      headers: { 'X-Request-Id': 'req-log-2' },
    });
    await new Promise((resolve) => setImmediate(resolve));
    const [first, second] = ['req-log-1', 'req-log-2'].map((id) => requestLines().filter((l) => l.req_id === id));
    expect(first).to.have.length(1);
    expect(first![0]).to.include({
      method: 'POST',
      path: '/v1/vouchers',
      status: 201,
      environment: 'sandbox',
      level: 30,
    });
    expect(first![0]!.duration_ms).to.be.a('number').at.least(0);
    expect(first![0]!.key_id).to.match(/^key_cfg_/);
    expect(second![0]).to.include({ status: 404, error_code: 'VOUCHER_NOT_FOUND' });
  });

  it("logs a failure of the WAL checkpointer's thread at error level, with when another starts", () => {
    checkpointer.onFailure?.(new Error('the checkpointer failed'), 1_000);
    const logged = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'the WAL checkpointer thread failed; another starts');
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include({ level: 50, restart_in_ms: 1_000 });
    expect(logged[0]!.err).to.include({ message: 'the checkpointer failed' });
  });

  it("logs a WAL checkpoint's failure at error level, with the file and the error's code", () => {
    checkpointer.onCheckFailure?.({
      file: '/data/sandbox/events.db',
      code: 'SQLITE_FULL',
      message: 'database or disk is full',
    });
    const logged = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'a WAL checkpoint failed; the next check tries again');
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include({
      level: 50,
      file: '/data/sandbox/events.db',
      code: 'SQLITE_FULL',
      error: 'database or disk is full',
    });
  });

  it('never writes an API key, whatever the request carries', async () => {
    await service.get('/v1/vouchers', { key: PRODUCTION_KEY });
    await service.get('/v1/vouchers?key=sk_test_InTheQuery', { key: 'sk_test_WrongKeyThatIsNotValid000000000' });
    await service.post('/v1/vouchers', fixedVoucher('LOGGED2'), { headers: { 'X-Api-Key': SANDBOX_KEY } });
    await new Promise((resolve) => setImmediate(resolve));
    const all = lines.join('\n');
    expect(requestLines().length).to.be.at.least(3);
    for (const secret of [
      SANDBOX_KEY,
      PRODUCTION_KEY,
      'sk_test_WrongKeyThatIsNotValid000000000',
      'sk_test_InTheQuery',
    ]) {
      expect(all).not.to.include(secret);
    }
  });

  it('names the error code of every error answer, body errors of compressed bodies included', async () => {
    const post = (id: string, headers: Record<string, string>, body: Buffer | string) =>
      fetch(`${service.baseUrl}/v1/vouchers`, {
        method: 'POST',
        body,
        headers: { Authorization: `Bearer ${SANDBOX_KEY}`, 'X-Request-Id': id, ...headers },
      });
    // A gzip body goes to body-parser (src/http/body.ts); a plain one is read by the service itself.
    expect(
      (
        await post(
          'req-log-gz',
          { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
          zlib.gzipSync('{not json'),
        )
      ).status,
    ).to.equal(400);
    expect((await post('req-log-plain', { 'Content-Type': 'application/json' }, '{not json')).status).to.equal(400);
    expect(
      (await post('req-log-enc', { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' }, 'x')).status,
    ).to.equal(415);
    await new Promise((resolve) => setImmediate(resolve));
    const codeOf = (id: string) => requestLines().find((l) => l.req_id === id)?.error_code;
    expect(codeOf('req-log-gz')).to.equal('INVALID_REQUEST');
    expect(codeOf('req-log-plain')).to.equal('INVALID_REQUEST');
    expect(codeOf('req-log-enc')).to.equal('UNSUPPORTED_MEDIA_TYPE');
  });

  it('logs a 5xx at error level with the request id the client was given', async () => {
    const find = service.sandbox.reads.find;
    service.sandbox.reads.find = () => Promise.reject(new Error('read store down'));
    try {
      const res = await service.get('/v1/vouchers');
      expect(res.status).to.equal(500);
      await new Promise((resolve) => setImmediate(resolve));
      const failed = requestLines().filter((l) => l.req_id === res.body.error.details.request_id);
      expect(failed).to.have.length(1);
      expect(failed[0]).to.include({ level: 50, status: 500, error_code: 'INTERNAL_ERROR' });
    } finally {
      service.sandbox.reads.find = find;
    }
  });
});
