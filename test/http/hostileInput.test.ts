/**
 * HTTP: requests any key can send cost bounded work and never answer 500. An invalid body lists
 * at most 20 problems (with their count), a body far over an array's cap is refused on the first
 * problem without the schema validator walking the rest, and odd but well-formed input (leap
 * seconds, offsets past any list, years past 9999 in UTC, bodies nested thousands deep) gets a
 * 400 naming the field.
 */
import { expect } from 'chai';
import { SANDBOX_KEY, TestService } from '../support/harness.ts';

/** A body sent as raw text, answered with its status, parsed body and size in bytes. */
const send = async (
  service: TestService,
  path: string,
  raw: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; bytes: number }> => {
  const res = await fetch(`${service.baseUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${SANDBOX_KEY}`, 'Content-Type': 'application/json', ...headers },
    body: raw,
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), bytes: Buffer.byteLength(text) };
};

const many = (element: string, count: number): string => `[${`${element},`.repeat(count).slice(0, -1)}]`;

describe('HTTP hostile input: bounded answers, no 500s', function () {
  this.timeout(60_000);
  let service: TestService;
  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  describe('a megabyte of array items far over the cap', () => {
    // 340,000 items in about 1 MB: before, about a million problems in a 63 MB answer
    const cases = [
      {
        path: '/v1/vouchers/validate',
        raw: `{"code":"X","order":{"value":100,"items":${many('{}', 340_000)}}}`,
        field: 'order.items',
        cap: 1000,
      },
      {
        path: '/v1/analytics/export',
        raw: `{"voucher_ids":${many('1', 340_000)},"metrics":["uses"]}`,
        field: 'voucher_ids',
        cap: 5000,
      },
      {
        path: '/v1/vouchers',
        raw: `{"code":"BIG","type":"percentage","value":10,"conditions":{"product_ids":${many('{}', 340_000)}}}`,
        field: 'conditions.product_ids',
        cap: 1000,
      },
    ];
    for (const { path, raw, field, cap } of cases) {
      it(`POST ${path}: 400 naming ${field} and its cap of ${cap}, in a small answer`, async () => {
        expect(raw.length).to.be.above(600_000);
        const res = await send(service, path, raw);
        expect(res.status).to.equal(400);
        expect(res.bytes).to.be.below(64 * 1024);
        expect(res.body.error.code).to.equal('INVALID_REQUEST');
        expect(res.body.error.details).to.deep.equal([
          { field, message: `must have at most ${cap} items; it has 340000` },
        ]);
        // the body was not checked whole: more problems may exist, and their number is not known
        expect(res.body.error).to.include({ details_truncated: true, details_total: null });
      });
    }
  });

  it('an invalid body within the caps: the first 20 problems, and how many there are', async () => {
    const res = await send(
      service,
      '/v1/vouchers/validate',
      `{"code":"X","order":{"value":100,"items":${many('{}', 1000)}}}`,
    );
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.have.length(20);
    expect(res.body.error.details[0]).to.deep.equal({ field: 'order.items[0].id', message: 'is required' });
    expect(res.body.error).to.include({ details_truncated: true, details_total: 3000 });
    expect(res.body.error.message).to.equal('The request has 3000 problems; details lists the first 20');
  });

  it('an invalid body with few problems lists them all, without the truncation members', async () => {
    const res = await service.post('/v1/vouchers/validate', { code: 'X', order: { value: -1, colour: 'red' } });
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.have.length(2);
    expect(res.body.error).not.to.have.any.keys('details_truncated', 'details_total');
  });

  it('a thousand unknown query parameters: 20 listed, 1000 counted', async () => {
    const query = Array.from({ length: 1000 }, (_, i) => `p${i}=1`).join('&');
    const res = await service.get(`/v1/analytics/vouchers/v_NoSuchVoucher000001/performance?${query}`);
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.have.length(20);
    expect(res.body.error).to.include({ details_truncated: true, details_total: 1000 });
  });

  describe('timestamps that are not instants the service can hold', () => {
    const create = (code: string, validUntil: string) =>
      service.post('/v1/vouchers', { code, type: 'fixed', value: 100, conditions: { valid_until: validUntil } });

    it('a leap second in valid_until: 400 naming conditions.valid_until (was 500)', async () => {
      const res = await create('LEAP1', '2099-12-31T23:59:60Z');
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal([
        {
          field: 'conditions.valid_until',
          message: 'must be an ISO 8601 timestamp with a zone, such as 2026-01-31T00:00:00Z (seconds 00 to 59)',
        },
      ]);
    });

    it('a leap second in created_after: 400 naming created_after (was 500)', async () => {
      const res = await service.get('/v1/vouchers?created_after=2099-12-31T23:59:60Z');
      expect(res.status).to.equal(400);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal(['created_after']);
    });

    it('a zone of hours only (+01), which the parser cannot read: 400 (was 500)', async () => {
      const res = await create('ZONE1', '2030-01-01T10:00:00+01');
      expect(res.status).to.equal(400);
      expect(res.body.error.details[0].field).to.equal('conditions.valid_until');
    });

    it('a timestamp past 9999-12-31 in UTC: 400 (was stored as "+010000-01-01T23:58Z")', async () => {
      const res = await create('Y10K', '9999-12-31T23:59:59-23:59');
      expect(res.status).to.equal(400);
      expect(res.body.error.details[0].field).to.equal('conditions.valid_until');
    });

    it('a leap second in customer.registration_date: 400 naming it', async () => {
      await service.createVoucher({ code: 'REGDATE', type: 'fixed', value: 100 });
      const res = await service.post('/v1/vouchers/validate', {
        code: 'REGDATE',
        order: { value: 1000 },
        customer: { registration_date: '2016-12-31T23:59:60Z' },
      });
      expect(res.status).to.equal(400);
      expect(res.body.error.details[0].field).to.equal('customer.registration_date');
    });

    it('an analytics end_date past 9999-12-31 in UTC: 400 naming end_date', async () => {
      const voucher = await service.createVoucher({ code: 'ANAY10K', type: 'fixed', value: 100 });
      const res = await service.get(
        `/v1/analytics/vouchers/${voucher.id}/performance?end_date=${encodeURIComponent('9999-12-31T23:00:00-02:00')}`,
      );
      expect(res.status).to.equal(400);
      expect(res.body.error.details[0].field).to.equal('end_date');
    });
  });

  it('an analytics end_date in the first days of year 0000: the default window starts on 0000-01-01', async () => {
    const voucher = await service.createVoucher({ code: 'ANAY0', type: 'fixed', value: 100 });
    const res = await service.get(`/v1/analytics/vouchers/${voucher.id}/customers?end_date=0000-01-15`);
    expect(res.status).to.equal(200);
    // was "-000001-12T00:00:00Z": a day 29 days earlier, rendered past what YYYY-MM-DD holds
    expect(res.body.time_period).to.deep.equal({ start: '0000-01-01T00:00:00Z', end: '0000-01-15T23:59:59Z' });
  });

  describe('offsets past any list', () => {
    for (const offset of ['1e308', '9007199254740993', '1000000001']) {
      it(`offset=${offset}: 400 naming offset on both lists`, async () => {
        const voucher = await service.createVoucher({ code: `OFF${offset.length}`, type: 'fixed', value: 100 });
        for (const path of ['/v1/vouchers', `/v1/vouchers/${voucher.id}/applications`]) {
          const res = await service.get(`${path}?offset=${offset}`);
          expect(res.status, path).to.equal(400);
          expect(res.body.error.details).to.deep.equal([{ field: 'offset', message: 'must be at most 1000000000' }]);
        }
      });
    }

    for (const [name, raw] of [
      ['offset', 'Infinity'],
      ['offset', '1e400'],
      ['offset', '-Infinity'],
      ['limit', 'Infinity'],
      ['limit', '-1e400'],
    ]) {
      it(`${name}=${raw} (no double holds it): 400 naming ${name} on every list`, async () => {
        for (const path of ['/v1/vouchers', '/v1/vouchers/v_unknown/applications', '/v1/webhooks']) {
          const res = await service.get(`${path}?${name}=${raw}`);
          expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(400);
          expect(res.body.error.details).to.deep.equal([{ field: name, message: 'must be a finite number' }]);
        }
      });
    }

    it('the largest offset is accepted: an empty page', async () => {
      const res = await service.get('/v1/vouchers?offset=1000000000');
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ offset: 1_000_000_000, has_more: false });
      expect(res.body.data).to.deep.equal([]);
    });
  });

  describe('bodies nested deeper than any request needs', () => {
    const deep = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
    const tooDeep = [{ field: 'body', message: 'is nested more than 32 levels deep' }];

    it('200,000 levels with an Idempotency-Key: 400 naming body (the fingerprint overflowed the stack: 500)', async () => {
      const raw = `{"code":"DEEP","type":"fixed","value":100,"x":${deep(200_000)}}`;
      const res = await send(service, '/v1/vouchers', raw, { 'Idempotency-Key': 'deep-1' });
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal(tooDeep);
    });

    it('the same on apply, and on a body inflated by body-parser (gzip)', async () => {
      const raw = `{"code":"DEEP","order_id":"o-deep","x":${deep(200_000)}}`;
      const res = await send(service, '/v1/vouchers/apply', raw, { 'Idempotency-Key': 'deep-2' });
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal(tooDeep);
      const { gzipSync } = await import('node:zlib');
      const zipped = await fetch(`${service.baseUrl}/v1/vouchers/apply`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${SANDBOX_KEY}`,
          'Content-Type': 'application/json',
          'Content-Encoding': 'gzip',
          'Idempotency-Key': 'deep-3',
        },
        body: gzipSync(raw),
      });
      expect(zipped.status).to.equal(400);
      expect(((await zipped.json()) as any).error.details).to.deep.equal(tooDeep);
    });

    it('32 levels pass the depth check (and meet the schema), brackets inside strings do not count', async () => {
      const raw = `{"code":"${'['.repeat(40)}","order":{"value":1},"x":${deep(31)}}`;
      const res = await send(service, '/v1/vouchers/validate', raw);
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal([{ field: 'x', message: 'is not allowed' }]);
    });
  });
});
