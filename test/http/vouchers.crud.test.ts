import { expect } from 'chai';
import { expireDueVouchers } from '../../src/application/vouchers.ts';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher, percentageVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';

const ISO_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const HOUR = 60 * 60 * 1000;

const iso = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Asserts a 400 INVALID_REQUEST whose details name exactly these fields (one detail each). */
const expectInvalid = (res: { status: number; body: any }, fields: string[]): void => {
  expect(res.status, JSON.stringify(res.body)).to.equal(400);
  expect(res.body.error.code).to.equal('INVALID_REQUEST');
  expect(res.body.error.message).to.be.a('string').that.is.not.empty;
  const details = res.body.error.details as Array<{ field: string; message: string }>;
  expect(details).to.be.an('array');
  expect(details.map((d) => d.field)).to.have.members(fields);
  expect(details).to.have.length(fields.length);
  for (const d of details) {
    expect(Object.keys(d).sort()).to.deep.equal(['field', 'message']);
    expect(d.message).to.be.a('string').that.is.not.empty;
  }
};

describe('HTTP /v1/vouchers: create, list, retrieve, update, delete', () => {
  let service: TestService;

  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  describe('POST /v1/vouchers', () => {
    it('creates a voucher: 201, Location, body fields, status active, usage_count 0, second-precision created_at', async () => {
      service.clock.set('2026-01-15T12:00:00.789Z');
      const res = await service.post(
        '/v1/vouchers',
        percentageVoucher('Summer20', {
          value: 20,
          conditions: { min_order_value: 5000, max_uses: 10, valid_until: '2026-12-31T23:59:59.500+01:00' },
        }),
      );
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const body = res.body;
      expect(body.id).to.match(/^v_[A-Za-z0-9]{16,}$/);
      expect(res.headers.get('location')).to.equal(`/v1/vouchers/${body.id}`);
      expect(body.code).to.equal('Summer20');
      expect(body.type).to.equal('percentage');
      expect(body.value).to.equal(20);
      expect(body.status).to.equal('active');
      expect(body.usage_count).to.equal(0);
      expect(body.conditions).to.deep.equal({
        min_order_value: 5000,
        max_uses: 10,
        valid_until: '2026-12-31T22:59:59Z',
      });
      expect(body.created_at).to.equal('2026-01-15T12:00:00Z');
      expect(body.created_at).to.match(ISO_SECONDS);
      expect(body.updated_at).to.equal('2026-01-15T12:00:00Z');

      const fetched = await service.get(`/v1/vouchers/${body.id}`);
      expect(fetched.status).to.equal(200);
      expect(fetched.body.code).to.equal('Summer20');
      expect(fetched.body.created_at).to.equal('2026-01-15T12:00:00Z');
    });

    it('creates a fixed voucher with value in cents', async () => {
      const body = await service.createVoucher(fixedVoucher('FIXED500', { value: 500 }));
      expect(body.type).to.equal('fixed');
      expect(body.value).to.equal(500);
      expect(body.conditions).to.deep.equal({});
    });

    const invalidCases: Array<[string, Record<string, unknown>, string[]]> = [
      ['missing code', { type: 'percentage', value: 10 }, ['code']],
      ['bad code characters', { code: 'SUMMER 20!', type: 'percentage', value: 10 }, ['code']],
      ['code longer than 64 characters', { code: 'A'.repeat(65), type: 'percentage', value: 10 }, ['code']],
      ['empty code', { code: '', type: 'percentage', value: 10 }, ['code']],
      ['unknown type', { code: 'BADTYPE', type: 'mystery', value: 10 }, ['type']],
      ['bogo without config', { code: 'BOGO1', type: 'bogo' }, ['config']],
      [
        'config on a percentage voucher',
        { code: 'PCTCFG', type: 'percentage', value: 10, config: { buy_quantity: 1 } },
        ['config'],
      ],
      [
        'value on a tiered voucher',
        {
          code: 'TIERVAL',
          type: 'tiered',
          value: 10,
          config: { tiers: [{ min_value: 0, max_value: null, discount: 5, discount_type: 'percentage' }] },
        },
        ['value'],
      ],
      [
        'bogo config member of the wrong JSON type',
        { code: 'BOGOSTR', type: 'bogo', config: { buy_quantity: 'two', get_quantity: 1 } },
        ['config.buy_quantity'],
      ],
      [
        'unknown member in a tiered config',
        { code: 'TIEREXTRA', type: 'tiered', config: { tiers: [], colour: 'red' } },
        ['config.colour'],
      ],
      ['percentage 101', { code: 'PCT101', type: 'percentage', value: 101 }, ['value']],
      ['percentage with 3 decimals', { code: 'PCT3DEC', type: 'percentage', value: 12.345 }, ['value']],
      ['negative percentage', { code: 'PCTNEG', type: 'percentage', value: -1 }, ['value']],
      ['fixed 0', { code: 'FIX0', type: 'fixed', value: 0 }, ['value']],
      ['fixed 1.5', { code: 'FIX15', type: 'fixed', value: 1.5 }, ['value']],
      ['fixed 100000001', { code: 'FIXBIG', type: 'fixed', value: 100_000_001 }, ['value']],
      ['missing value (percentage)', { code: 'NOVALUE', type: 'percentage' }, ['value']],
      ['missing value (fixed)', { code: 'NOVALUEF', type: 'fixed' }, ['value']],
      ['value as a string', { code: 'STRVALUE', type: 'fixed', value: '500' }, ['value']],
      ['unknown top-level member', { code: 'EXTRA1', type: 'fixed', value: 500, colour: 'red' }, ['colour']],
      [
        'unknown member in conditions',
        { code: 'EXTRA2', type: 'fixed', value: 500, conditions: { max_usage: 3 } },
        ['conditions.max_usage'],
      ],
      [
        'valid_from after valid_until',
        {
          code: 'DATES1',
          type: 'fixed',
          value: 500,
          conditions: { valid_from: '2026-06-01T00:00:00Z', valid_until: '2026-05-01T00:00:00Z' },
        },
        ['conditions.valid_until'],
      ],
      [
        'valid_until not a timestamp',
        { code: 'DATES2', type: 'fixed', value: 500, conditions: { valid_until: 'tomorrow' } },
        ['conditions.valid_until'],
      ],
      [
        'max_uses 0',
        { code: 'MAXUSE0', type: 'fixed', value: 500, conditions: { max_uses: 0 } },
        ['conditions.max_uses'],
      ],
      [
        'customer_limit 0',
        { code: 'CUSTLIM0', type: 'fixed', value: 500, conditions: { customer_limit: 0 } },
        ['conditions.customer_limit'],
      ],
      [
        'min_order_value with cents fraction',
        { code: 'MINFRAC', type: 'fixed', value: 500, conditions: { min_order_value: 10.5 } },
        ['conditions.min_order_value'],
      ],
    ];

    for (const [name, body, fields] of invalidCases) {
      it(`rejects ${name}: 400 INVALID_REQUEST naming ${fields.join(', ')}`, async () => {
        const res = await service.post('/v1/vouchers', body);
        expectInvalid(res, fields);
      });
    }

    it('says "is required" for a missing code and "is not allowed" for an unknown member', async () => {
      const missing = await service.post('/v1/vouchers', { type: 'fixed', value: 500 });
      expect(missing.body.error.details).to.deep.equal([{ field: 'code', message: 'is required' }]);
      const extra = await service.post('/v1/vouchers', { code: 'EXTRA3', type: 'fixed', value: 500, colour: 'red' });
      expect(extra.body.error.details).to.deep.equal([{ field: 'colour', message: 'is not allowed' }]);
    });

    it('reports every invalid field at once', async () => {
      const res = await service.post('/v1/vouchers', {
        code: 'bad code',
        type: 'mystery',
        extra: 1,
        conditions: { max_uses: 0 },
      });
      expectInvalid(res, ['code', 'type', 'extra', 'conditions.max_uses']);
    });

    it('creates nothing when the request is invalid (the code stays free)', async () => {
      expectInvalid(await service.post('/v1/vouchers', percentageVoucher('FREELATER', { value: 101 })), ['value']);
      const res = await service.post('/v1/vouchers', percentageVoucher('FREELATER'));
      expect(res.status).to.equal(201);
    });

    it('accepts percentage 0 and 100 and two decimals', async () => {
      for (const [code, value] of [
        ['PCT0', 0],
        ['PCT100', 100],
        ['PCT1250', 12.5],
        ['PCT3333', 33.33],
      ] as const) {
        const res = await service.post('/v1/vouchers', percentageVoucher(code, { value }));
        expect(res.status, `${code}: ${JSON.stringify(res.body)}`).to.equal(201);
        expect(res.body.value).to.equal(value);
      }
    });

    it('accepts a 64-character code and fixed 1 and 100000000', async () => {
      expect((await service.post('/v1/vouchers', fixedVoucher(`${'B'.repeat(63)}_`, { value: 1 }))).status).to.equal(
        201,
      );
      expect((await service.post('/v1/vouchers', fixedVoucher('FIXMAX', { value: 100_000_000 }))).status).to.equal(201);
    });

    it('rejects a taken code with 409 DUPLICATE_VOUCHER_CODE {code, voucher_id}, also case-insensitively', async () => {
      const first = await service.createVoucher(fixedVoucher('DupeCode', { value: 100 }));
      const same = await service.post('/v1/vouchers', fixedVoucher('DupeCode', { value: 200 }));
      expect(same.status).to.equal(409);
      expect(same.body.error.code).to.equal('DUPLICATE_VOUCHER_CODE');
      expect(same.body.error.details).to.deep.equal({ code: 'DupeCode', voucher_id: first.id });

      const lower = await service.post('/v1/vouchers', percentageVoucher('dupecode', { value: 5 }));
      expect(lower.status).to.equal(409);
      expect(lower.body.error.code).to.equal('DUPLICATE_VOUCHER_CODE');
      // details name the code as it is stored, whatever case was sent
      expect(lower.body.error.details).to.deep.equal({ code: 'DupeCode', voucher_id: first.id });

      const fetched = await service.get(`/v1/vouchers/${first.id}`);
      expect(fetched.body.value).to.equal(100);
    });
  });

  describe('GET /v1/vouchers', () => {
    // A service of its own, so totals and order are exact.
    let svc: TestService;
    const ids: Record<string, string> = {};

    before(async () => {
      svc = await TestService.start();
      svc.clock.set('2026-03-01T10:00:00Z');
      ids.P1 = (await svc.createVoucher(percentageVoucher('P1'))).id;
      svc.clock.set('2026-03-02T10:00:00Z');
      ids.F1 = (await svc.createVoucher(fixedVoucher('F1', { value: 300 }))).id;
      svc.clock.set('2026-03-03T10:00:00Z');
      ids.P2 = (
        await svc.createVoucher(
          percentageVoucher('P2', { value: 20, conditions: { valid_until: '2026-03-10T00:00:00Z' } }),
        )
      ).id;
      svc.clock.set('2026-03-04T10:00:00Z');
      ids.F2 = (await svc.createVoucher(fixedVoucher('F2', { value: 700 }))).id;
      svc.clock.set('2026-03-05T10:00:00Z');
      ids.P3 = (await svc.createVoucher(percentageVoucher('P3', { value: 30 }))).id;
      expect((await svc.delete(`/v1/vouchers/${ids.F2}`)).status).to.equal(200);
    });
    after(async () => {
      await svc.stop();
    });

    const codes = (res: { body: any }): string[] => res.body.data.map((v: any) => v.code);

    it('lists newest first with total, limit, offset, has_more and the list fields', async () => {
      const res = await svc.get('/v1/vouchers');
      expect(res.status).to.equal(200);
      expect(codes(res)).to.deep.equal(['P3', 'F2', 'P2', 'F1', 'P1']);
      expect(res.body.total).to.equal(5);
      expect(res.body.limit).to.equal(10);
      expect(res.body.offset).to.equal(0);
      expect(res.body.has_more).to.equal(false);
      const p2 = res.body.data[2];
      expect(p2).to.include({
        id: ids.P2,
        code: 'P2',
        type: 'percentage',
        value: 20,
        status: 'active',
        usage_count: 0,
        created_at: '2026-03-03T10:00:00Z',
      });
    });

    it('pages with limit and offset', async () => {
      const first = await svc.get('/v1/vouchers?limit=2');
      expect(codes(first)).to.deep.equal(['P3', 'F2']);
      expect(first.body).to.include({ total: 5, limit: 2, offset: 0, has_more: true });
      const second = await svc.get('/v1/vouchers?limit=2&offset=2');
      expect(codes(second)).to.deep.equal(['P2', 'F1']);
      expect(second.body).to.include({ total: 5, limit: 2, offset: 2, has_more: true });
      const last = await svc.get('/v1/vouchers?limit=2&offset=4');
      expect(codes(last)).to.deep.equal(['P1']);
      expect(last.body).to.include({ total: 5, limit: 2, offset: 4, has_more: false });
      const beyond = await svc.get('/v1/vouchers?limit=2&offset=10');
      expect(codes(beyond)).to.deep.equal([]);
      expect(beyond.body).to.include({ total: 5, has_more: false });
    });

    it('filters by status, including expired by the clock', async () => {
      svc.clock.set('2026-03-09T23:59:59Z');
      expect(codes(await svc.get('/v1/vouchers?status=active'))).to.deep.equal(['P3', 'P2', 'F1', 'P1']);
      expect(codes(await svc.get('/v1/vouchers?status=expired'))).to.deep.equal([]);
      expect(codes(await svc.get('/v1/vouchers?status=inactive'))).to.deep.equal(['F2']);

      svc.clock.set('2026-03-10T00:00:01Z');
      const active = await svc.get('/v1/vouchers?status=active');
      expect(codes(active)).to.deep.equal(['P3', 'F1', 'P1']);
      expect(active.body.total).to.equal(3);
      const expired = await svc.get('/v1/vouchers?status=expired');
      expect(codes(expired)).to.deep.equal(['P2']);
      expect(expired.body.total).to.equal(1);
      expect(expired.body.data[0].status).to.equal('expired');
      const all = await svc.get('/v1/vouchers');
      expect(all.body.data.map((v: any) => v.status)).to.deep.equal([
        'active',
        'inactive',
        'expired',
        'active',
        'active',
      ]);
    });

    it('filters by type', async () => {
      const fixed = await svc.get('/v1/vouchers?type=fixed');
      expect(codes(fixed)).to.deep.equal(['F2', 'F1']);
      expect(fixed.body.total).to.equal(2);
      expect(codes(await svc.get('/v1/vouchers?type=percentage&limit=1'))).to.deep.equal(['P3']);
    });

    it('filters by created_after and created_before', async () => {
      const after = await svc.get('/v1/vouchers?created_after=2026-03-02T12:00:00Z');
      expect(codes(after)).to.deep.equal(['P3', 'F2', 'P2']);
      const before = await svc.get('/v1/vouchers?created_before=2026-03-03T00:00:00Z');
      expect(codes(before)).to.deep.equal(['F1', 'P1']);
      const between = await svc.get(
        `/v1/vouchers?created_after=${encodeURIComponent('2026-03-02T00:00:00+00:00')}&created_before=2026-03-04T12:00:00Z`,
      );
      expect(codes(between)).to.deep.equal(['F2', 'P2', 'F1']);
      expect(between.body.total).to.equal(3);
      const combined = await svc.get('/v1/vouchers?created_after=2026-03-02T00:00:00Z&type=percentage');
      expect(codes(combined)).to.deep.equal(['P3', 'P2']);
    });

    const badQueries: Array<[string, string]> = [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['offset=-1', 'offset'],
      ['limit=abc', 'limit'],
      ['status=deleted', 'status'],
      ['type=mystery', 'type'],
      ['created_after=yesterday', 'created_after'],
      ['sort=code', 'sort'],
    ];
    for (const [query, field] of badQueries) {
      it(`rejects ?${query} with 400 INVALID_REQUEST naming ${field}`, async () => {
        expectInvalid(await svc.get(`/v1/vouchers?${query}`), [field]);
      });
    }

    it('accepts limit 1 and 100', async () => {
      expect((await svc.get('/v1/vouchers?limit=1')).body.data).to.have.length(1);
      const hundred = await svc.get('/v1/vouchers?limit=100');
      expect(hundred.status).to.equal(200);
      expect(hundred.body.limit).to.equal(100);
    });

    it('lists a voucher immediately after its creation', async () => {
      const created = await svc.createVoucher(fixedVoucher('JUSTNOW', { value: 150 }));
      const res = await svc.get('/v1/vouchers?limit=1');
      expect(res.body.data[0].id).to.equal(created.id);
      expect(res.body.total).to.equal(6);
    });
  });

  describe('GET /v1/vouchers/{id}', () => {
    it('returns the voucher with conditions, usage_count, usage_history newest first', async () => {
      service.clock.set('2026-02-01T09:00:00Z');
      const v = await service.createVoucher(
        fixedVoucher('HISTORY1', {
          value: 250,
          conditions: { min_order_value: 1000, customer_limit: 5, product_ids: ['sku-1'] },
        }),
      );
      for (const [i, orderId] of ['ord-a', 'ord-b', 'ord-c'].entries()) {
        service.clock.set(`2026-02-01T09:0${i + 1}:00Z`);
        const res = await service.post('/v1/vouchers/apply', {
          code: 'HISTORY1',
          order_id: orderId,
          customer: { id: 'cust-1' },
          order: { value: 2000 + i, currency: 'USD', items: [{ id: 'sku-1', price: 1000, quantity: 2 }] },
        });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
      }
      const res = await service.get(`/v1/vouchers/${v.id}`);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        id: v.id,
        code: 'HISTORY1',
        type: 'fixed',
        value: 250,
        status: 'active',
        usage_count: 3,
      });
      expect(res.body.conditions).to.deep.equal({ min_order_value: 1000, customer_limit: 5, product_ids: ['sku-1'] });
      expect(res.body.created_at).to.equal('2026-02-01T09:00:00Z');
      expect(res.body.updated_at).to.equal('2026-02-01T09:00:00Z');
      expect(
        res.body.usage_history.map((u: any) => [u.order_id, u.discount_amount, u.final_amount, u.applied_at]),
      ).to.deep.equal([
        ['ord-c', 250, 1752, '2026-02-01T09:03:00Z'],
        ['ord-b', 250, 1751, '2026-02-01T09:02:00Z'],
        ['ord-a', 250, 1750, '2026-02-01T09:01:00Z'],
      ]);
      expect(res.body.usage_history[0]).to.include({ customer_id: 'cust-1', currency: 'USD', status: 'applied' });
      expect(res.body.usage_history[0].id).to.match(/^va_/);
    });

    it('keeps only the latest 100 applications in usage_history; /applications pages through all of them', async () => {
      const v = await service.createVoucher(fixedVoucher('MANYUSES', { value: 100 }));
      for (let i = 1; i <= 102; i += 1) {
        const res = await service.post('/v1/vouchers/apply', applyBody('MANYUSES', `bulk-${i}`, { value: 1000 + i }));
        expect(res.status).to.equal(201);
      }
      const res = await service.get(`/v1/vouchers/${v.id}`);
      expect(res.body.usage_count).to.equal(102);
      expect(res.body.usage_history).to.have.length(100);
      expect(res.body.usage_history[0].order_id).to.equal('bulk-102');
      expect(res.body.usage_history[99].order_id).to.equal('bulk-3');

      const page1 = await service.get(`/v1/vouchers/${v.id}/applications`);
      expect(page1.status).to.equal(200);
      expect(page1.body).to.include({ total: 102, limit: 10, offset: 0, has_more: true });
      expect(page1.body.data.map((a: any) => a.order_id)).to.deep.equal(
        Array.from({ length: 10 }, (_, i) => `bulk-${102 - i}`),
      );
      expect(page1.body.data[0]).to.include({
        order_id: 'bulk-102',
        discount_amount: 100,
        final_amount: 1002,
        status: 'applied',
      });
      expect(Object.keys(page1.body.data[0]).sort()).to.deep.equal([
        'applied_at',
        'currency',
        'customer_id',
        'discount_amount',
        'final_amount',
        'id',
        'order_id',
        'status',
      ]);

      const last = await service.get(`/v1/vouchers/${v.id}/applications?limit=100&offset=100`);
      expect(last.body.data.map((a: any) => a.order_id)).to.deep.equal(['bulk-2', 'bulk-1']);
      expect(last.body).to.include({ total: 102, limit: 100, offset: 100, has_more: false });

      const middle = await service.get(`/v1/vouchers/${v.id}/applications?limit=3&offset=50`);
      expect(middle.body.data.map((a: any) => a.order_id)).to.deep.equal(['bulk-52', 'bulk-51', 'bulk-50']);
      expect(middle.body.has_more).to.equal(true);
    });

    it('rejects bad /applications paging and answers 404 for an unknown voucher there', async () => {
      const v = await service.createVoucher(fixedVoucher('APPSPAGE'));
      expectInvalid(await service.get(`/v1/vouchers/${v.id}/applications?limit=0`), ['limit']);
      expectInvalid(await service.get(`/v1/vouchers/${v.id}/applications?offset=-1`), ['offset']);
      const empty = await service.get(`/v1/vouchers/${v.id}/applications`);
      expect(empty.body).to.deep.equal({ data: [], total: 0, limit: 10, offset: 0, has_more: false });
      const unknown = await service.get('/v1/vouchers/v_DoesNotExist0000000000/applications');
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error).to.deep.include({
        code: 'VOUCHER_NOT_FOUND',
        details: { voucher_id: 'v_DoesNotExist0000000000' },
      });
    });

    it('answers 404 VOUCHER_NOT_FOUND {voucher_id} for an unknown id, also a malformed one', async () => {
      const res = await service.get('/v1/vouchers/v_DoesNotExist0000000000');
      expect(res.status).to.equal(404);
      expect(res.body.error.code).to.equal('VOUCHER_NOT_FOUND');
      expect(res.body.error.details).to.deep.equal({ voucher_id: 'v_DoesNotExist0000000000' });
      const malformed = await service.get('/v1/vouchers/not-an-id');
      expect(malformed.status).to.equal(404);
      expect(malformed.body.error.details).to.deep.equal({ voucher_id: 'not-an-id' });
    });
  });

  describe('PUT /v1/vouchers/{id}', () => {
    it('updates only what is sent and merges conditions; null removes a condition', async () => {
      service.clock.set('2026-04-01T08:00:00Z');
      const v = await service.createVoucher(
        percentageVoucher('UPDATE1', {
          value: 10,
          conditions: { min_order_value: 2000, max_uses: 100, customer_limit: 2, valid_until: '2026-12-31T00:00:00Z' },
        }),
      );
      service.clock.set('2026-04-02T08:30:00.250Z');
      const res = await service.put(`/v1/vouchers/${v.id}`, { conditions: { max_uses: 50, customer_limit: null } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.include({ id: v.id, code: 'UPDATE1', type: 'percentage', value: 10, status: 'active' });
      expect(res.body.conditions).to.deep.equal({
        min_order_value: 2000,
        max_uses: 50,
        valid_until: '2026-12-31T00:00:00Z',
      });
      expect(res.body.updated_at).to.equal('2026-04-02T08:30:00Z');
      expect(res.body.created_at).to.equal('2026-04-01T08:00:00Z');

      const value = await service.put(`/v1/vouchers/${v.id}`, { value: 12.5 });
      expect(value.status).to.equal(200);
      expect(value.body.value).to.equal(12.5);
      expect(value.body.conditions).to.deep.equal({
        min_order_value: 2000,
        max_uses: 50,
        valid_until: '2026-12-31T00:00:00Z',
      });

      const fetched = await service.get(`/v1/vouchers/${v.id}`);
      expect(fetched.body).to.include({
        value: 12.5,
        updated_at: '2026-04-02T08:30:00Z',
        created_at: '2026-04-01T08:00:00Z',
      });
      expect(fetched.body.conditions).to.deep.equal({
        min_order_value: 2000,
        max_uses: 50,
        valid_until: '2026-12-31T00:00:00Z',
      });

      // the new value is what validate uses: 12.5% of 4000 = 500
      const validated = await service.post('/v1/vouchers/validate', validateBody('UPDATE1', { value: 4000 }));
      expect(validated.body.discount_amount).to.equal(500);
    });

    it('changes the status to inactive and back to active', async () => {
      const v = await service.createVoucher(fixedVoucher('STATUS1'));
      const off = await service.put(`/v1/vouchers/${v.id}`, { status: 'inactive' });
      expect(off.status).to.equal(200);
      expect(off.body.status).to.equal('inactive');
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.status).to.equal('inactive');
      const rejected = await service.post('/v1/vouchers/validate', validateBody('STATUS1'));
      expect(rejected.status).to.equal(400);
      expect(rejected.body.error).to.deep.include({ code: 'VOUCHER_INVALID', details: { reason: 'inactive' } });
      const on = await service.put(`/v1/vouchers/${v.id}`, { status: 'active' });
      expect(on.body.status).to.equal('active');
      expect((await service.post('/v1/vouchers/validate', validateBody('STATUS1'))).status).to.equal(200);
    });

    it('rejects immutable fields with one "is immutable" detail per field', async () => {
      const v = await service.createVoucher(fixedVoucher('IMMUT1', { value: 100 }));
      const res = await service.put(`/v1/vouchers/${v.id}`, {
        code: 'OTHER',
        type: 'percentage',
        created_at: '2020-01-01T00:00:00Z',
        id: 'v_x',
        value: 200,
      });
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('INVALID_REQUEST');
      expect(res.body.error.details).to.have.deep.members([
        { field: 'code', message: 'is immutable' },
        { field: 'type', message: 'is immutable' },
        { field: 'created_at', message: 'is immutable' },
        { field: 'id', message: 'is immutable' },
      ]);
      expect(res.body.error.details).to.have.length(4);
      const single = await service.put(`/v1/vouchers/${v.id}`, { code: 'OTHER' });
      expect(single.body.error.details).to.deep.equal([{ field: 'code', message: 'is immutable' }]);
      const fetched = await service.get(`/v1/vouchers/${v.id}`);
      expect(fetched.body).to.include({ code: 'IMMUT1', type: 'fixed', value: 100 });
    });

    it('rejects invalid updates: percentage 150, fixed 0, bad status, unknown members, dates out of order after the merge', async () => {
      const pct = await service.createVoucher(
        percentageVoucher('UPDPCT', { value: 10, conditions: { valid_from: '2026-05-01T00:00:00Z' } }),
      );
      expectInvalid(await service.put(`/v1/vouchers/${pct.id}`, { value: 150 }), ['value']);
      expectInvalid(await service.put(`/v1/vouchers/${pct.id}`, { value: 10.005 }), ['value']);
      expectInvalid(await service.put(`/v1/vouchers/${pct.id}`, { status: 'expired' }), ['status']);
      expectInvalid(await service.put(`/v1/vouchers/${pct.id}`, { colour: 'red' }), ['colour']);
      expectInvalid(await service.put(`/v1/vouchers/${pct.id}`, { conditions: { bogus: 1 } }), ['conditions.bogus']);
      expectInvalid(
        await service.put(`/v1/vouchers/${pct.id}`, { conditions: { valid_until: '2026-04-01T00:00:00Z' } }),
        ['conditions.valid_until'],
      );
      const fixed = await service.createVoucher(fixedVoucher('UPDFIX'));
      expectInvalid(await service.put(`/v1/vouchers/${fixed.id}`, { value: 0 }), ['value']);
      expectInvalid(await service.put(`/v1/vouchers/${fixed.id}`, { value: 99.5 }), ['value']);
      const fetched = await service.get(`/v1/vouchers/${pct.id}`);
      expect(fetched.body.value).to.equal(10);
      expect(fetched.body.conditions).to.deep.equal({ valid_from: '2026-05-01T00:00:00Z' });
    });

    it('answers 404 VOUCHER_NOT_FOUND for an unknown id', async () => {
      const res = await service.put('/v1/vouchers/v_DoesNotExist0000000000', { value: 5 });
      expect(res.status).to.equal(404);
      expect(res.body.error).to.deep.include({
        code: 'VOUCHER_NOT_FOUND',
        details: { voucher_id: 'v_DoesNotExist0000000000' },
      });
    });

    it('revives an expired voucher by moving valid_until into the future (and only then)', async () => {
      service.clock.set('2026-06-01T00:00:00Z');
      const v = await service.createVoucher(
        fixedVoucher('REVIVE1', { value: 300, conditions: { valid_until: '2026-06-02T00:00:00Z' } }),
      );
      service.clock.set('2026-06-03T00:00:00Z');
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.status).to.equal('expired');
      const expired = await service.post('/v1/vouchers/validate', validateBody('REVIVE1'));
      expect(expired.status).to.equal(400);
      expect(expired.body.error).to.deep.include({
        code: 'VOUCHER_EXPIRED',
        details: { expired_at: '2026-06-02T00:00:00Z', current_time: '2026-06-03T00:00:00Z' },
      });

      // asking to be active while valid_until stays in the past is refused, naming the field
      const refused = await service.put(`/v1/vouchers/${v.id}`, { value: 400, status: 'active' });
      expect(refused.status).to.equal(400);
      expect(refused.body.error.code).to.equal('INVALID_REQUEST');
      expect(refused.body.error.details.map((d: any) => d.field)).to.deep.equal(['status']);
      // an update that leaves valid_until in the past keeps it expired
      const still = await service.put(`/v1/vouchers/${v.id}`, { value: 400 });
      expect(still.status).to.equal(200);
      expect(still.body.status).to.equal('expired');

      const revived = await service.put(`/v1/vouchers/${v.id}`, {
        conditions: { valid_until: '2026-07-01T00:00:00Z' },
      });
      expect(revived.status).to.equal(200);
      expect(revived.body.status).to.equal('active');
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.status).to.equal('active');
      const ok = await service.post('/v1/vouchers/validate', validateBody('REVIVE1'));
      expect(ok.status).to.equal(200);
      expect(ok.body.discount_amount).to.equal(400);
    });

    it('revives a voucher whose expiry was recorded as an event', async () => {
      service.clock.set('2026-08-01T00:00:00Z');
      const v = await service.createVoucher(
        fixedVoucher('REVIVE2', { value: 300, conditions: { valid_until: '2026-08-01T01:00:00Z' } }),
      );
      service.clock.advance(2 * HOUR);
      expect(await expireDueVouchers(service.sandbox)).to.be.greaterThan(0);
      const events = await service.sandbox.events.readStream(`voucher-${v.id}`);
      expect(events.map((e) => e.type)).to.deep.equal(['VoucherCreated', 'VoucherExpired']);
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.status).to.equal('expired');
      const expiredList = await service.get('/v1/vouchers?status=expired&limit=100');
      expect(expiredList.body.data.map((x: any) => x.id)).to.include(v.id);

      const revived = await service.put(`/v1/vouchers/${v.id}`, {
        conditions: { valid_until: iso(new Date(service.clock.now().getTime() + HOUR)) },
      });
      expect(revived.body.status).to.equal('active');
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.status).to.equal('active');
      expect((await service.post('/v1/vouchers/validate', validateBody('REVIVE2'))).status).to.equal(200);
    });

    it('revives an expired voucher when valid_until is removed', async () => {
      service.clock.set('2026-09-01T00:00:00Z');
      const v = await service.createVoucher(
        fixedVoucher('REVIVE3', { value: 300, conditions: { valid_until: '2026-09-01T01:00:00Z' } }),
      );
      service.clock.advance(2 * HOUR);
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.status).to.equal('expired');
      const revived = await service.put(`/v1/vouchers/${v.id}`, { conditions: { valid_until: null } });
      expect(revived.body.status).to.equal('active');
      expect(revived.body.conditions).to.deep.equal({});
    });
  });

  describe('DELETE /v1/vouchers/{id}', () => {
    it('deactivates: 200 {id, code, status inactive, deleted_at}; a repeat is 200 with the same deleted_at', async () => {
      service.clock.set('2026-10-01T10:00:00Z');
      const v = await service.createVoucher(fixedVoucher('DELETE1', { value: 100 }));
      service.clock.set('2026-10-01T11:00:00.900Z');
      const res = await service.delete(`/v1/vouchers/${v.id}`);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({
        id: v.id,
        code: 'DELETE1',
        status: 'inactive',
        deleted_at: '2026-10-01T11:00:00Z',
      });

      service.clock.set('2026-10-01T12:00:00Z');
      const again = await service.delete(`/v1/vouchers/${v.id}`);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal({
        id: v.id,
        code: 'DELETE1',
        status: 'inactive',
        deleted_at: '2026-10-01T11:00:00Z',
      });
      const events = await service.sandbox.events.readStream(`voucher-${v.id}`);
      expect(events.map((e) => e.type)).to.deep.equal(['VoucherCreated', 'VoucherDeactivated']);

      const fetched = await service.get(`/v1/vouchers/${v.id}`);
      expect(fetched.status).to.equal(200);
      expect(fetched.body).to.include({ id: v.id, code: 'DELETE1', status: 'inactive', value: 100 });

      const validated = await service.post('/v1/vouchers/validate', validateBody('DELETE1'));
      expect(validated.status).to.equal(400);
      expect(validated.body.error.code).to.equal('VOUCHER_INVALID');
      expect(validated.body.error.details).to.deep.equal({ reason: 'inactive' });

      const applied = await service.post('/v1/vouchers/apply', applyBody('DELETE1', 'del-1'));
      expect(applied.status).to.equal(400);
      expect(applied.body.error.details).to.deep.equal({ reason: 'inactive' });

      // the code stays taken
      const dupe = await service.post('/v1/vouchers', fixedVoucher('delete1'));
      expect(dupe.status).to.equal(409);
      expect(dupe.body.error.details).to.deep.equal({ code: 'DELETE1', voucher_id: v.id });
    });

    it('answers 404 VOUCHER_NOT_FOUND for an unknown id', async () => {
      const res = await service.delete('/v1/vouchers/v_DoesNotExist0000000000');
      expect(res.status).to.equal(404);
      expect(res.body.error).to.deep.include({
        code: 'VOUCHER_NOT_FOUND',
        details: { voucher_id: 'v_DoesNotExist0000000000' },
      });
    });
  });
});
