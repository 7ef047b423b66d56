import { expect } from 'chai';
import type { RequestHandler } from 'express';
import { MemoryStore } from 'express-rate-limit';
import sinon, { type SinonFakeTimers } from 'sinon';
import type { Guard } from '../../src/http/auth.ts';
import { buildOpenApi } from '../../src/http/openapi.ts';
import {
  DEFAULT_RATE_LIMITS,
  defaultRateLimitConfig,
  RATE_LIMIT_GROUPS,
  type RateLimitGroup,
} from '../../src/http/rateLimits.ts';
import { apiRoutes, servedRoutes } from '../support/apiRoutes.ts';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { percentageVoucher } from '../fixtures/vouchers.ts';
import { PRODUCTION_KEY, SANDBOX_KEY, TestService, type TestResponse } from '../support/harness.ts';

/**
 * Rate limits with the spec's defaults, over real HTTP.
 *
 * Only `Date` is faked (sinon, toFake: ['Date']): express-rate-limit's MemoryStore reads the time
 * from Date.now() alone, so its window stands still while a test runs (no window can roll over
 * half-way through, whatever the machine's speed) and moves only when the test ticks it; sockets,
 * timers and the stores keep running on real time. The instant is the service's FakeClock start,
 * plus 250 ms so that the rounding of the reset to whole seconds shows.
 */
const T0 = Date.parse('2026-01-15T12:00:00.250Z');
/** Unix seconds of the first window's end, rounded up as the header gives it. */
const RESET_1 = Math.ceil((T0 + 60_000) / 1000);
const RESET_1_ISO = '2026-01-15T12:01:01Z';

const ORDER = { value: 10_000 };
let codes = 0;

interface GroupCase {
  group: RateLimitGroup;
  limit: number;
  /** The i-th request (1-based) of the group: cheap, and cycling through the group's routes. */
  send(service: TestService, i: number, key?: string): Promise<TestResponse>;
  /** What the i-th request answers when it is not limited. */
  expected(i: number): number;
}

const GROUPS: GroupCase[] = [
  {
    group: 'read',
    limit: 100,
    send: (s, i, key) =>
      [
        () => s.get('/v1/vouchers?limit=1', { key }),
        () => s.get('/v1/vouchers/v_unknown', { key }),
        () => s.get('/v1/vouchers/v_unknown/applications', { key }),
      ][i % 3]!(),
    expected: (i) => (i % 3 === 0 ? 200 : 404),
  },
  {
    group: 'create',
    limit: 50,
    // The first creates a voucher; the others are invalid (400) and count all the same.
    send: (s, i, key) =>
      s.post('/v1/vouchers', i === 1 ? percentageVoucher(`RL${(codes += 1)}`) : { type: 'nope' }, { key }),
    expected: (i) => (i === 1 ? 201 : 400),
  },
  {
    group: 'validate',
    limit: 200,
    send: (s, _i, key) => s.post('/v1/vouchers/validate', validateBody('UNKNOWN', ORDER), { key }),
    expected: () => 404,
  },
  {
    group: 'apply',
    limit: 100,
    send: (s, i, key) => s.post('/v1/vouchers/apply', applyBody('UNKNOWN', `o_${i}`, ORDER), { key }),
    expected: () => 404,
  },
  {
    group: 'other',
    limit: 100,
    // Update, delete and rollback share one counter.
    send: (s, i, key) =>
      [
        () => s.put('/v1/vouchers/v_unknown', { value: 5 }, { key }),
        () => s.delete('/v1/vouchers/v_unknown', { key }),
        () => s.post('/v1/vouchers/applications/va_unknown/rollback', {}, { key }),
      ][i % 3]!(),
    expected: () => 404,
  },
];

const headersOf = (res: TestResponse) => ({
  limit: res.headers.get('X-RateLimit-Limit'),
  remaining: res.headers.get('X-RateLimit-Remaining'),
  reset: res.headers.get('X-RateLimit-Reset'),
});

const expect429 = (res: TestResponse, limit: number, reset = RESET_1, resetIso = RESET_1_ISO, retryAfter = '60') => {
  expect(res.status, JSON.stringify(res.body)).to.equal(429);
  expect(res.body).to.deep.equal({
    error: { code: 'RATE_LIMIT_EXCEEDED', message: res.body.error.message, details: { limit, reset_at: resetIso } },
  });
  expect(res.body.error.message)
    .to.be.a('string')
    .and.match(/rate limit/i);
  expect(res.headers.get('Retry-After')).to.equal(retryAfter);
  expect(headersOf(res)).to.deep.equal({ limit: String(limit), remaining: '0', reset: String(reset) });
};

/** Sends requests 1..limit, checking each one's status and headers. */
const exhaust = async (service: TestService, c: GroupCase, key?: string): Promise<void> => {
  for (let i = 1; i <= c.limit; i += 1) {
    const res = await c.send(service, i, key);
    expect(res.status, `${c.group} request ${i}: ${JSON.stringify(res.body)}`).to.equal(c.expected(i));
    expect(headersOf(res), `${c.group} request ${i}`).to.deep.equal({
      limit: String(c.limit),
      remaining: String(c.limit - i),
      reset: String(RESET_1),
    });
  }
};

describe('HTTP rate limits', () => {
  let clock: SinonFakeTimers;
  let service: TestService;

  beforeEach(async () => {
    clock = sinon.useFakeTimers({ now: T0, toFake: ['Date'] });
    service = await TestService.start({ rateLimits: defaultRateLimitConfig() });
  });
  afterEach(async () => {
    await service.stop();
    clock.restore();
  });

  for (const c of GROUPS) {
    describe(`group ${c.group} (${c.limit} per minute)`, () => {
      it(`lets exactly ${c.limit} requests of a key through, counting down, then answers 429 RATE_LIMIT_EXCEEDED with Retry-After`, async () => {
        await exhaust(service, c);
        expect429(await c.send(service, c.limit + 1), c.limit);
        // Still limited: a 429 does not open the door again.
        expect429(await c.send(service, c.limit + 2), c.limit);
      });

      it('counts per key: another key of the same environment, and a key of the other environment, are not affected', async () => {
        const { key: other } = await service.embedded.keys.create('sandbox', 'other');
        await exhaust(service, c);
        expect429(await c.send(service, c.limit + 1), c.limit);

        const fromOther = await c.send(service, 1, other);
        expect(fromOther.status).to.equal(c.expected(1));
        expect(headersOf(fromOther)).to.deep.equal({
          limit: String(c.limit),
          remaining: String(c.limit - 1),
          reset: String(RESET_1),
        });
        const fromProduction = await c.send(service, 1, PRODUCTION_KEY);
        expect(fromProduction.status).to.not.equal(429);
        expect(fromProduction.headers.get('X-RateLimit-Remaining')).to.equal(String(c.limit - 1));
      });

      it('counts per group: the other groups of the same key are not limited', async () => {
        await exhaust(service, c);
        expect429(await c.send(service, c.limit + 1), c.limit);
        for (const other of GROUPS.filter((g) => g.group !== c.group)) {
          const res = await other.send(service, 1);
          expect(res.status, other.group).to.equal(other.expected(1));
          expect(headersOf(res), other.group).to.deep.equal({
            limit: String(other.limit),
            remaining: String(other.limit - 1),
            reset: String(RESET_1),
          });
        }
      });
    });
  }

  it('gives every route its group: GET /vouchers, /vouchers/{id} and /vouchers/{id}/applications share one counter, as do PUT, DELETE and rollback', async () => {
    // Covered by the cycling requests above; here the counter is read after each route once.
    const read = [
      await service.get('/v1/vouchers'),
      await service.get('/v1/vouchers/v_x'),
      await service.get('/v1/vouchers/v_x/applications'),
    ].map((r) => r.headers.get('X-RateLimit-Remaining'));
    expect(read).to.deep.equal(['99', '98', '97']);
    const other = [
      await service.put('/v1/vouchers/v_x', { value: 1 }),
      await service.delete('/v1/vouchers/v_x'),
      await service.post('/v1/vouchers/applications/va_x/rollback', {}),
    ].map((r) => r.headers.get('X-RateLimit-Remaining'));
    expect(other).to.deep.equal(['99', '98', '97']);
  });

  it('opens a new window when the old one ends, not before', async () => {
    const create = GROUPS.find((g) => g.group === 'create')!;
    await exhaust(service, create);
    expect429(await create.send(service, 51), 50);

    clock.tick(59_999); // 1 ms before the window's end (T0 + 60 s): still limited
    expect429(await create.send(service, 52), 50, RESET_1, RESET_1_ISO, '1');

    clock.tick(1); // the window has ended: a fresh one starts with this request
    const res = await create.send(service, 53);
    expect(res.status).to.equal(400);
    expect(headersOf(res)).to.deep.equal({
      limit: '50',
      remaining: '49',
      reset: String(Math.ceil((T0 + 120_000) / 1000)),
    });
  });

  it('counts a request the key lacks the scope for (the limit runs before the scope check): 403 with the headers, then 429', async () => {
    const { key: readOnly } = await service.embedded.keys.create('sandbox', 'read only', ['vouchers:read']);
    for (let i = 1; i <= 50; i += 1) {
      const res = await service.post('/v1/vouchers', percentageVoucher('X', { value: 1 }), { key: readOnly });
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('INSUFFICIENT_PERMISSIONS');
      expect(res.headers.get('X-RateLimit-Remaining')).to.equal(String(50 - i));
    }
    expect429(await service.post('/v1/vouchers', percentageVoucher('X', { value: 1 }), { key: readOnly }), 50);
  });

  it('counts and labels body errors of a limited endpoint too: 415, 413 and unparseable JSON carry the headers', async () => {
    const answers = [
      await service.post('/v1/vouchers', undefined, { raw: 'code=X', headers: { 'Content-Type': 'text/plain' } }),
      await service.post('/v1/vouchers', undefined, {
        raw: JSON.stringify({ code: 'X'.repeat(1_100_000) }),
        headers: { 'Content-Type': 'application/json' },
      }),
      await service.post('/v1/vouchers', undefined, {
        raw: '{"code":',
        headers: { 'Content-Type': 'application/json' },
      }),
    ];
    expect(answers.map((r) => r.status)).to.deep.equal([415, 413, 400]);
    expect(answers.map((r) => r.body.error.code)).to.deep.equal([
      'UNSUPPORTED_MEDIA_TYPE',
      'PAYLOAD_TOO_LARGE',
      'INVALID_REQUEST',
    ]);
    expect(answers.map((r) => r.headers.get('X-RateLimit-Remaining'))).to.deep.equal(['49', '48', '47']);
  });

  it('sends no rate limit headers where there is no key to count: 401, unknown paths, /health, the OpenAPI document', async () => {
    const answers = [
      await service.get('/v1/vouchers', { key: null }),
      await service.get('/v1/vouchers', { key: 'sk_test_NoSuchKey000000000000000000000' }),
      await service.get('/v1/nothing-here'),
      await service.get('/health'),
      await service.get('/v1/openapi.json', { key: null }),
    ];
    expect(answers.map((r) => r.status)).to.deep.equal([401, 401, 404, 200, 200]);
    for (const res of answers) expect(res.headers.get('X-RateLimit-Limit')).to.equal(null);
  });

  it('uses the store factory it is given: one store per group, counting by key id', async () => {
    await service.stop();
    const made: Array<{ group: RateLimitGroup; keys: string[] }> = [];
    service = await TestService.start({
      rateLimits: defaultRateLimitConfig(),
      rateLimitStores: (group) => {
        const store = new MemoryStore();
        const seen = { group, keys: [] as string[] };
        made.push(seen);
        const increment = store.increment.bind(store);
        store.increment = async (key: string) => {
          seen.keys.push(key);
          return increment(key);
        };
        return store;
      },
    });
    await service.post('/v1/vouchers/validate', validateBody('UNKNOWN', ORDER));
    await service.post('/v1/vouchers/validate', validateBody('UNKNOWN', ORDER), { key: PRODUCTION_KEY });
    expect(made.map((m) => m.group)).to.have.members([
      'read',
      'create',
      'validate',
      'apply',
      'other',
      'performance',
      'trends',
      'customers',
      'export',
    ]);
    const validate = made.find((m) => m.group === 'validate')!;
    expect(validate.keys).to.deep.equal([
      service.embedded.keys.authenticate(SANDBOX_KEY)!.id,
      service.embedded.keys.authenticate(PRODUCTION_KEY)!.id,
    ]);
    for (const m of made.filter((x) => x.group !== 'validate')) expect(m.keys).to.deep.equal([]);
  });
});

describe('HTTP rate limits: operator settings', () => {
  let service: TestService | undefined;
  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  it('applies overrides: {validate: 3} gives 3, the other groups keep their defaults', async () => {
    service = await TestService.start({
      rateLimits: { enabled: true, windowMs: 60_000, limits: { ...DEFAULT_RATE_LIMITS, validate: 3 } },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1)
      statuses.push((await service.post('/v1/vouchers/validate', validateBody('UNKNOWN', ORDER))).status);
    expect(statuses).to.deep.equal([404, 404, 404, 429]);
    expect((await service.get('/v1/vouchers')).headers.get('X-RateLimit-Limit')).to.equal('100');
  });

  it('off: no limiting and no rate limit headers', async () => {
    service = await TestService.start({ rateLimits: { enabled: false } });
    for (let i = 1; i <= 60; i += 1) {
      const res = await service.post('/v1/vouchers', { type: 'nope' });
      expect(res.status).to.equal(400);
      expect(res.headers.get('X-RateLimit-Limit')).to.equal(null);
      expect(res.headers.get('X-RateLimit-Remaining')).to.equal(null);
    }
  });

  it('on the real clock (nothing faked): X-RateLimit-Reset is a Unix-seconds integer within the next 60 s', async () => {
    service = await TestService.start({ rateLimits: defaultRateLimitConfig() });
    const before = Date.now();
    const res = await service.get('/v1/vouchers');
    const after = Date.now();
    const reset = res.headers.get('X-RateLimit-Reset')!;
    expect(reset).to.match(/^\d+$/);
    expect(Number(reset))
      .to.be.at.least(Math.ceil((before + 60_000) / 1000))
      .and.at.most(Math.ceil((after + 60_000) / 1000));
    expect(res.headers.get('X-RateLimit-Limit')).to.equal('100');
    expect(res.headers.get('X-RateLimit-Remaining')).to.equal('99');
  });
});

describe('rate limit groups of the routes, and the OpenAPI document', () => {
  type Operation = { 'x-rate-limit-group'?: string; responses: Record<string, { headers?: Record<string, unknown> }> };
  const doc = buildOpenApi() as {
    paths: Record<string, Record<string, Operation>>;
    components: { headers: Record<string, unknown> };
  };
  // the API's operations: the operator's endpoints at the root (servers: /) have no key and no limit
  const operations = Object.entries(doc.paths)
    .filter(([, item]) => !('servers' in item))
    .flatMap(([template, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'delete', 'patch'].includes(method))
        .map(([method, op]) => ({ route: `${method.toUpperCase()} ${template.replace(/\{[^}]+\}/g, ':id')}`, op })),
    );

  it('the router gives every route the group the OpenAPI document names (x-rate-limit-group)', () => {
    // A guard whose only middleware remembers the group, so each route tells its group.
    const guard: Guard = (_scope, group) => {
      const marker: RequestHandler & { group?: RateLimitGroup } = (_req, _res, next) => next();
      marker.group = group;
      return marker;
    };
    const served = Object.fromEntries(
      servedRoutes<{ group?: RateLimitGroup }>(apiRoutes(guard).stack).map((route) => [
        `${route.method} ${route.path.replace(/:[A-Za-z]+/g, ':id')}`,
        route.first.group,
      ]),
    );
    const documented = Object.fromEntries(operations.map(({ route, op }) => [route, op['x-rate-limit-group']]));
    expect(served).to.deep.equal(documented);
    expect(served).to.deep.equal({
      'POST /vouchers': 'create',
      'GET /vouchers': 'read',
      'POST /vouchers/validate': 'validate',
      'POST /vouchers/apply': 'apply',
      'POST /vouchers/applications/:id/rollback': 'other',
      'GET /vouchers/:id': 'read',
      'GET /vouchers/:id/applications': 'read',
      'PUT /vouchers/:id': 'other',
      'DELETE /vouchers/:id': 'other',
      'GET /analytics/vouchers/:id/performance': 'performance',
      'GET /analytics/vouchers/:id/trends': 'trends',
      'GET /analytics/vouchers/:id/customers': 'customers',
      'POST /analytics/export': 'export',
      'GET /analytics/export/:id': 'other',
      'GET /analytics/export/:id/download': 'other',
      'POST /webhooks': 'other',
      'GET /webhooks': 'other',
      'GET /webhooks/:id': 'other',
      'PATCH /webhooks/:id': 'other',
      'DELETE /webhooks/:id': 'other',
      'POST /webhooks/:id/rotate-secret': 'other',
      'GET /webhooks/:id/deliveries': 'other',
      'POST /webhooks/:id/deliveries/:id/resend': 'other',
      'POST /webhooks/:id/recover': 'other',
      'POST /webhooks/:id/test': 'other',
    });
    for (const group of Object.values(served)) expect(RATE_LIMIT_GROUPS).to.include(group);
  });

  it('documents 429 and the three headers on every response of every operation (but 401)', () => {
    expect(doc.components.headers).to.have.all.keys(
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
    );
    expect(operations).to.have.length(9 + 6 + 10); // voucher routes + analytics routes + webhook routes
    for (const { route, op } of operations) {
      expect(op.responses, route).to.have.property('429');
      expect(op.responses['429']!.headers, route).to.have.property('Retry-After');
      for (const [status, response] of Object.entries(op.responses)) {
        if (status === '401')
          expect(response.headers ?? {}, `${route} ${status}`).to.not.have.property('X-RateLimit-Limit');
        else
          expect(response.headers, `${route} ${status}`).to.include.all.keys(
            'X-RateLimit-Limit',
            'X-RateLimit-Remaining',
            'X-RateLimit-Reset',
          );
      }
    }
  });
});
