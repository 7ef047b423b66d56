/**
 * `npm run fuzz` in CI: the fuzzer's core (scripts/fuzz/run.ts) against a real service child with
 * a fixed seed and a small budget, bounded in requests and time; and the fuzzer's own parts it
 * depends on (requests replay by seed and index; what counts as a finding).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { judge, MAX_ERROR_BYTES } from '../../scripts/fuzz/judge.ts';
import { operations } from '../../scripts/fuzz/operations.ts';
import { formatFinding } from '../../scripts/fuzz/report.ts';
import { generate, HOST_MARKER, type FuzzRequest, type GenerateContext } from '../../scripts/fuzz/requests.ts';
import { allowedBy, fuzz, type FuzzReport } from '../../scripts/fuzz/run.ts';
import type { Outcome } from '../../scripts/fuzz/send.ts';
import { socketDeadlineFor, stopService, type Service, type ServerTimeouts } from '../../scripts/fuzz/service.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const SEED = 1414;
const BUDGET = 1_000;

/** Short server timeouts, so that slow sockets are closed within seconds. */
const TIMEOUTS: ServerTimeouts = { headersMs: 1_000, requestMs: 2_000, idleMs: 3_000, keepAliveMs: 1_000 };

describe('fuzz: hostile requests against a running service (npm run fuzz)', () => {
  describe('requests', () => {
    const context = (without: string[] = []): GenerateContext => ({
      seed: SEED,
      operations: operations(),
      refs: {
        voucher: ['v_aaaaaaaaaaaaaaaa'],
        code: ['CODE'],
        application: ['va_aaaaaaaaaaaaaaaa'],
        export: ['export_a'],
      },
      keys: { sandbox: 'sk_test_sandbox', redeem: 'sk_test_redeem', production: 'sk_live_production' },
      allowed: allowedBy(without),
    });
    const bytes = (request: FuzzRequest) =>
      JSON.stringify({ ...request, body: request.body?.toString('base64'), raw: request.raw?.toString('base64') });

    it('makes request i of a seed the same whatever was made before it (so --replay=i sends it again)', () => {
      const fresh = context();
      const indices = [3, 120, 199];
      const alone = indices.map((i) => bytes(generate(i, context())));
      for (let i = 0; i < 200; i += 1) generate(i, fresh);
      expect(indices.map((i) => bytes(generate(i, fresh)))).to.deep.equal(alone);
    });

    it('leaves out what --without names, a tag and its variants', () => {
      const ctx = context(['odd-date', 'raw']);
      for (let i = 0; i < 300; i += 1) {
        const request = generate(i, ctx);
        expect(request.target).to.not.equal('raw');
        expect(request.tags.filter((t) => t.startsWith('odd-date'))).to.deep.equal([]);
      }
    });
  });

  describe('what counts as a finding', () => {
    const request = (over: Partial<FuzzRequest> = {}): FuzzRequest => ({
      index: 7,
      target: 'getVoucher',
      method: 'GET',
      path: '/v1/vouchers/v_x',
      headers: {},
      tags: [],
      ...over,
    });
    const outcome = (over: Partial<Outcome> = {}): Outcome => ({ status: 200, body: '{}', bytes: 2, ms: 1, ...over });
    const error = (code: string) => JSON.stringify({ error: { code, message: 'm', details: {} } });
    const kinds = (req: FuzzRequest, out: Outcome) => judge(req, out, 1_000).map((f) => f.kind);

    it('a 5xx, an unanswered request, a dropped connection, an oversized or shapeless error, a repeated Host', () => {
      expect(kinds(request(), outcome({ status: 500, body: error('INTERNAL_ERROR') }))).to.deep.equal(['5xx']);
      expect(kinds(request(), outcome({ status: undefined, error: 'timeout' }))).to.deep.equal(['unanswered']);
      expect(kinds(request(), outcome({ status: undefined, error: 'ECONNRESET' }))).to.deep.equal(['dropped']);
      const big = outcome({ status: 400, body: error('INVALID_REQUEST'), bytes: MAX_ERROR_BYTES + 1 });
      expect(kinds(request(), big)).to.deep.equal(['oversized-error']);
      expect(kinds(request(), outcome({ status: 404, body: '<html>' }))).to.deep.equal(['error-shape']);
      expect(kinds(request(), outcome({ body: `{"url":"http://${HOST_MARKER}/x"}` }))).to.deep.equal(['leak']);
    });

    it("not the spec's 500 EXPORT_FAILED, a reset after headers over 16 KB, or malformed HTTP refused by a close", () => {
      const exportFailed = outcome({ status: 500, body: error('EXPORT_FAILED') });
      expect(kinds(request({ target: 'createExport', method: 'POST' }), exportFailed)).to.deep.equal([]);
      const longHeader = request({ headers: { 'X-Fuzz-Padding': 'h'.repeat(17_000) } });
      expect(kinds(longHeader, outcome({ status: undefined, error: 'ECONNRESET' }))).to.deep.equal([]);
      const raw = request({ target: 'raw', raw: Buffer.from('CONNECT x:1 HTTP/1.1\r\n\r\n') });
      expect(kinds(raw, outcome({ status: undefined, error: 'closed without an answer' }))).to.deep.equal([]);
      expect(kinds(raw, outcome({ status: undefined, error: 'timeout' }))).to.deep.equal(['unanswered']);
    });
  });

  describe(`a run of ${BUDGET} requests, seed ${SEED}`, () => {
    let service: Service | undefined;
    let report: FuzzReport;

    before(async function () {
      this.timeout(120_000);
      report = await fuzz({
        seed: SEED,
        durationS: 60, // a bound: the budget is spent in a few seconds
        budget: BUDGET,
        concurrency: 4,
        without: [],
        sockets: 6,
        socketDeadlineMs: socketDeadlineFor(TIMEOUTS),
        requestTimeoutMs: 15_000,
        controlIntervalMs: 250,
        maxRssGrowthMb: 1_024,
        timeouts: TIMEOUTS,
        root: ROOT,
        keepData: false,
        log: () => undefined,
        onService: (s) => {
          service = s;
        },
      });
    });
    after(async () => {
      // fuzz() stops the service itself; this is for a run cut short by the timeout
      if (service) await stopService(service);
    });

    it('sends the whole budget to every operation of the OpenAPI document and the other routes, in every family', () => {
      expect(report.sent).to.equal(BUDGET);
      expect(Object.keys(report.byTarget)).to.include.members([
        ...operations().map((op) => op.id),
        'raw',
        'route',
        'dashboard',
      ]);
      const families = new Set(Object.keys(report.byTag).map((tag) => tag.split('/')[0]));
      expect([...families]).to.include.members([
        'valid',
        'odd-date',
        'odd-number',
        'unicode',
        'proto-key',
        'deep-nesting',
        'bad-json',
        'content-type',
        'long-url',
        'header',
        'auth',
        'raw',
      ]);
      expect(report.answered).to.be.greaterThan(BUDGET * 0.9);
    });

    it('finds nothing: no 5xx, no crash, nothing unanswered, every slow socket closed, the control request answered', () => {
      expect(report.crashed).to.equal(false);
      expect(report.findings.map((f) => formatFinding(report, f)).join('\n\n')).to.equal('');
      expect(report.control.samples.length).to.be.greaterThan(0);
      expect(report.sockets).to.have.length(6);
    });
  });
});
