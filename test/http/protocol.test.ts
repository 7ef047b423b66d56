import http from 'node:http';
import zlib from 'node:zlib';
import { expect } from 'chai';
import sinon from 'sinon';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { PRODUCTION_KEY, SANDBOX_KEY, TestService } from '../support/harness.ts';
import { expectError, expectMatchesOpenApi, type HttpResponse } from '../support/httpClient.ts';

describe('HTTP protocol: auth, environments, errors, media types, OpenAPI, request ids', () => {
  let service: TestService;

  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });
  afterEach(() => {
    sinon.restore();
  });

  describe('authentication', () => {
    it('answers 401 MISSING_API_KEY without an Authorization header', async () => {
      const res = await service.get('/v1/vouchers', { key: null });
      expectError(res, 401, 'MISSING_API_KEY', {});
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
    });

    for (const header of [
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer ',
      SANDBOX_KEY,
      `Token ${SANDBOX_KEY}`,
      `Bearer ${SANDBOX_KEY} extra`,
    ]) {
      it(`answers 401 MISSING_API_KEY for a malformed header "${header.slice(0, 20)}…"`, async () => {
        const res = await service.get('/v1/vouchers', { key: null, headers: { Authorization: header } });
        expectError(res, 401, 'MISSING_API_KEY', {});
      });
    }

    for (const key of [
      'sk_test_UnknownKeyUnknownKey000000001',
      'sk_live_UnknownKeyUnknownKey000000001',
      'not_a_key_at_all',
    ]) {
      it(`answers 401 INVALID_API_KEY for an unknown key ${key.slice(0, 8)}…`, async () => {
        expectError(await service.get('/v1/vouchers', { key }), 401, 'INVALID_API_KEY', {});
      });
    }

    it('checks the key before the body: POST without a key is 401, not 400', async () => {
      const res = await service.post('/v1/vouchers', { nonsense: true }, { key: null });
      expectError(res, 401, 'MISSING_API_KEY', {});
      const create = await service.post('/v1/vouchers', fixedVoucher('NOAUTH'), {
        key: 'sk_test_UnknownKeyUnknownKey000000001',
      });
      expect(create.status).to.equal(401);
      expect((await service.post('/v1/vouchers/validate', validateBody('NOAUTH'))).status).to.equal(404);
    });

    it('accepts the bearer scheme in any case', async () => {
      const res = await service.get('/v1/vouchers', { key: null, headers: { Authorization: `bearer ${SANDBOX_KEY}` } });
      expect(res.status).to.equal(200);
    });
  });

  describe('environments', () => {
    it('keeps sandbox and production apart: ids, lists, codes and redemption', async () => {
      const prod = await service.createVoucher(fixedVoucher('ENVCODE', { value: 700 }), { key: PRODUCTION_KEY });
      const fromSandbox = await service.get(`/v1/vouchers/${prod.id}`, { key: SANDBOX_KEY });
      expectError(fromSandbox, 404, 'VOUCHER_NOT_FOUND', { voucher_id: prod.id });
      expect((await service.get(`/v1/vouchers/${prod.id}`, { key: PRODUCTION_KEY })).body.value).to.equal(700);

      // the same code can exist in both
      const sand = await service.createVoucher(fixedVoucher('envcode', { value: 300 }), { key: SANDBOX_KEY });
      expect(sand.id).to.not.equal(prod.id);
      const fromProduction = await service.get(`/v1/vouchers/${sand.id}`, { key: PRODUCTION_KEY });
      expectError(fromProduction, 404, 'VOUCHER_NOT_FOUND', { voucher_id: sand.id });

      const prodOnly = await service.createVoucher(fixedVoucher('PRODONLY'), { key: PRODUCTION_KEY });
      const sandboxList = await service.get('/v1/vouchers?limit=100', { key: SANDBOX_KEY });
      const productionList = await service.get('/v1/vouchers?limit=100', { key: PRODUCTION_KEY });
      const sandboxIds = sandboxList.body.data.map((v: any) => v.id);
      const productionIds = productionList.body.data.map((v: any) => v.id);
      expect(sandboxIds).to.include(sand.id);
      expect(sandboxIds).to.not.include.members([prod.id]);
      expect(sandboxIds).to.not.include(prodOnly.id);
      expect(productionIds).to.deep.equal([prodOnly.id, prod.id]);
      expect(productionList.body.total).to.equal(2);

      // each environment validates and applies its own voucher
      expect(
        (await service.post('/v1/vouchers/validate', validateBody('ENVCODE'), { key: SANDBOX_KEY })).body
          .discount_amount,
      ).to.equal(300);
      expect(
        (await service.post('/v1/vouchers/validate', validateBody('ENVCODE'), { key: PRODUCTION_KEY })).body
          .discount_amount,
      ).to.equal(700);
      const unknown = await service.post('/v1/vouchers/validate', validateBody('PRODONLY'), { key: SANDBOX_KEY });
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.code).to.equal('VOUCHER_NOT_FOUND');
      expect(unknown.body.error.details.suggestions).to.not.include('PRODONLY');

      const applied = await service.post('/v1/vouchers/apply', applyBody('ENVCODE', 'env-1'), { key: PRODUCTION_KEY });
      expect(applied.status).to.equal(201);
      expect((await service.get(`/v1/vouchers/${prod.id}`, { key: PRODUCTION_KEY })).body.usage_count).to.equal(1);
      expect((await service.get(`/v1/vouchers/${sand.id}`, { key: SANDBOX_KEY })).body.usage_count).to.equal(0);
      const rollback = await service.post(`/v1/vouchers/applications/${applied.body.id}/rollback`, undefined, {
        key: SANDBOX_KEY,
      });
      expectError(rollback, 404, 'APPLICATION_NOT_FOUND', { application_id: applied.body.id });
      expect((await service.put(`/v1/vouchers/${prod.id}`, { value: 1 }, { key: SANDBOX_KEY })).status).to.equal(404);
      expect((await service.delete(`/v1/vouchers/${prod.id}`, { key: SANDBOX_KEY })).status).to.equal(404);
      expect((await service.get(`/v1/vouchers/${prod.id}`, { key: PRODUCTION_KEY })).body).to.include({
        status: 'active',
        value: 700,
      });
      expect(await service.sandbox.events.readStream(`voucher-${prod.id}`)).to.deep.equal([]);
    });

    it('keeps Idempotency-Keys per environment', async () => {
      const headers = { 'Idempotency-Key': 'env-key-1' };
      const a = await service.post('/v1/vouchers', fixedVoucher('IDEMENV'), { key: SANDBOX_KEY, headers });
      const b = await service.post('/v1/vouchers', fixedVoucher('IDEMENV'), { key: PRODUCTION_KEY, headers });
      expect(a.status).to.equal(201);
      expect(b.status).to.equal(201);
      expect(b.headers.get('idempotent-replayed')).to.equal(null);
      expect(b.body.id).to.not.equal(a.body.id);
    });
  });

  describe('errors and media types', () => {
    it('answers unknown paths with 404 NOT_FOUND {path}', async () => {
      expectError(await service.get('/v1/nothing-here?x=1'), 404, 'NOT_FOUND', { path: '/v1/nothing-here' });
      expectError(await service.get('/nothing'), 404, 'NOT_FOUND', { path: '/nothing' });
      expectError(await service.request('PATCH', '/v1/vouchers'), 404, 'NOT_FOUND', { path: '/v1/vouchers' });
    });

    it('answers unknown paths with 404 whatever the key (no key, a bad key)', async () => {
      expectError(await service.get('/v1/nothing-here', { key: null }), 404, 'NOT_FOUND', {
        path: '/v1/nothing-here',
      });
      expectError(await service.get('/v1/nothing-here', { key: 'sk_test_unknown' }), 404, 'NOT_FOUND', {
        path: '/v1/nothing-here',
      });
      // a known path still asks for the key first
      expect((await service.get('/v1/vouchers', { key: null })).status).to.equal(401);
    });

    it('answers a body over 1 MB with 413 PAYLOAD_TOO_LARGE {max_bytes}', async () => {
      const big = JSON.stringify({ ...fixedVoucher('BIG'), padding: 'x'.repeat(1_100_000) });
      const res = await service.post('/v1/vouchers', undefined, {
        raw: big,
        headers: { 'Content-Type': 'application/json' },
      });
      expectError(res, 413, 'PAYLOAD_TOO_LARGE', { max_bytes: 1_048_576 });
    });

    it('accepts a body just under 1 MB (then rejects its unknown member with 400)', async () => {
      const body = JSON.stringify({ ...fixedVoucher('NEARLIMIT'), padding: 'x'.repeat(1_000_000) });
      const res = await service.post('/v1/vouchers', undefined, {
        raw: body,
        headers: { 'Content-Type': 'application/json' },
      });
      expect(res.status).to.equal(400);
      expect(res.body.error.details).to.deep.equal([{ field: 'padding', message: 'is not allowed' }]);
    });

    it('answers a text/plain body with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
      const res = await service.post('/v1/vouchers', undefined, {
        raw: JSON.stringify(fixedVoucher('PLAIN')),
        headers: { 'Content-Type': 'text/plain' },
      });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', {});
      const form = await service.post('/v1/vouchers', undefined, {
        raw: 'code=PLAIN&type=fixed',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expectError(form, 415, 'UNSUPPORTED_MEDIA_TYPE', {});
      expect((await service.post('/v1/vouchers/validate', validateBody('PLAIN'))).status).to.equal(404);
    });

    it('accepts application/json with a charset', async () => {
      const res = await service.post('/v1/vouchers', undefined, {
        raw: JSON.stringify(fixedVoucher('CHARSET')),
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
      });
      expect(res.status).to.equal(201);
    });

    it('answers unparseable JSON with 400 INVALID_REQUEST', async () => {
      const res = await service.post('/v1/vouchers', undefined, {
        raw: '{"code": "BROKEN",',
        headers: { 'Content-Type': 'application/json' },
      });
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('INVALID_REQUEST');
      expect(res.body.error.details).to.be.an('array').with.length(1);
      expect(res.body.error.details[0].field).to.equal('body');
      const scalar = await service.post('/v1/vouchers', undefined, {
        raw: '"just a string"',
        headers: { 'Content-Type': 'application/json' },
      });
      expect(scalar.status).to.equal(400);
      expect(scalar.body.error.code).to.equal('INVALID_REQUEST');
    });

    describe('bodies the plain reader hands to body-parser, or reads in pieces', () => {
      /** POST with node:http, so the body can be compressed or sent in chunks without a length. */
      const send = (urlPath: string, headers: Record<string, string>, pieces: Buffer[]) =>
        new Promise<HttpResponse>((resolve, reject) => {
          const req = http.request(
            `${service.baseUrl}${urlPath}`,
            { method: 'POST', headers: { Authorization: `Bearer ${SANDBOX_KEY}`, ...headers } },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => {
                const response = {
                  status: res.statusCode!,
                  headers: new Headers(
                    Object.entries(res.headers).flatMap(([name, value]): Array<[string, string]> =>
                      value === undefined ? [] : [[name, String(value)]],
                    ),
                  ),
                  body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
                };
                expectMatchesOpenApi('POST', urlPath, response);
                resolve(response);
              });
            },
          );
          req.on('error', reject);
          for (const piece of pieces) req.write(piece);
          req.end();
        });
      const voucher = (code: string) => Buffer.from(JSON.stringify(fixedVoucher(code)));

      it('accepts a gzip-compressed JSON body (Content-Encoding: gzip)', async () => {
        const res = await send('/v1/vouchers', { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, [
          zlib.gzipSync(voucher('GZIPPED')),
        ]);
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.body.code).to.equal('GZIPPED');
      });

      it('answers a compressed body that does not inflate with 400 INVALID_REQUEST naming the body, not 500', async () => {
        const plain = voucher('NOT_GZIPPED');
        const truncated = zlib.gzipSync(plain).subarray(0, 12);
        for (const [encoding, body] of [
          ['gzip', plain],
          ['deflate', plain],
          ['br', plain],
          ['gzip', truncated],
        ] as const) {
          const res = await send('/v1/vouchers', { 'Content-Type': 'application/json', 'Content-Encoding': encoding }, [
            body,
          ]);
          expectError(res, 400, 'INVALID_REQUEST', [
            { field: 'body', message: `could not be read with its Content-Encoding (${encoding})` },
          ]);
        }
      });

      it('answers a charset other than UTF-8 with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
        const res = await send('/v1/vouchers', { 'Content-Type': 'application/json; charset=latin1' }, [
          voucher('LATIN'),
        ]);
        expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', {});
      });

      it('reads a chunked body sent in pieces, and counts a chunked body over 1 MB as it arrives (413)', async () => {
        const body = voucher('CHUNKED');
        const pieces = [body.subarray(0, 5), body.subarray(5, 17), body.subarray(17)];
        const res = await send(
          '/v1/vouchers',
          { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
          pieces,
        );
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.body.code).to.equal('CHUNKED');
        const big = Buffer.from(JSON.stringify({ ...fixedVoucher('BIGCHUNKS'), padding: 'x'.repeat(1_100_000) }));
        const tooBig = await send(
          '/v1/vouchers',
          { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
          Array.from({ length: Math.ceil(big.length / 65_536) }, (_, i) => big.subarray(i * 65_536, (i + 1) * 65_536)),
        );
        expectError(tooBig, 413, 'PAYLOAD_TOO_LARGE', { max_bytes: 1_048_576 });
        expect((await service.get('/v1/vouchers?limit=100')).body.data.map((v: any) => v.code)).to.not.include(
          'BIGCHUNKS',
        );
      });
    });

    it('names an unknown member or query parameter of any length cut to 100 characters: a 900 KB name gives a short answer', async () => {
      const name = 'k'.repeat(900_000);
      const shown = `${'k'.repeat(100)}… (900000 characters)`;
      const res = await service.post('/v1/vouchers/validate', { ...validateBody('X'), [name]: 1 });
      expectError(res, 400, 'INVALID_REQUEST', [{ field: shown, message: 'is not allowed' }]);
      expect(JSON.stringify(res.body).length).to.be.lessThan(1_000);
      const query = await service.get(`/v1/vouchers?${'q'.repeat(15_000)}=1`);
      expectError(query, 400, 'INVALID_REQUEST', [
        { field: `${'q'.repeat(100)}… (15000 characters)`, message: 'is not allowed' },
      ]);
      expect(JSON.stringify(query.body).length).to.be.lessThan(1_000);
    });

    it('answers an array body with 400 INVALID_REQUEST', async () => {
      const res = await service.post('/v1/vouchers', [fixedVoucher('ARR')]);
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('INVALID_REQUEST');
      expect(res.body.error.details.map((d: any) => d.field)).to.deep.equal(['body']);
    });

    it('answers an internal failure with 500 INTERNAL_ERROR {request_id}: no stack, no error text', async () => {
      sinon.stub(service.sandbox.reads, 'find').rejects(new Error('boom secret'));
      const res = await service.get('/v1/vouchers', { headers: { 'X-Request-Id': 'req-fail-1' } });
      expectError(res, 500, 'INTERNAL_ERROR', { request_id: 'req-fail-1' });
      expect(res.headers.get('x-request-id')).to.equal('req-fail-1');
      const text = JSON.stringify(res.body);
      expect(text).to.not.include('boom');
      expect(text).to.not.include('secret');
      expect(text).to.not.match(/\bat \S+ \(|\.ts:\d+/);

      const generated = await service.get('/v1/vouchers');
      expect(generated.status).to.equal(500);
      expect(generated.body.error.details.request_id).to.equal(generated.headers.get('x-request-id'));
      expect(generated.body.error.details.request_id).to.be.a('string').that.is.not.empty;

      sinon.restore();
      expect((await service.get('/v1/vouchers')).status).to.equal(200);
    });

    it('answers a failing write with 500 and keeps the service usable', async () => {
      sinon.stub(service.sandbox.events, 'appendToStream').rejects(new Error('disk on fire'));
      const res = await service.post('/v1/vouchers', fixedVoucher('WRITEFAIL'));
      expect(res.status).to.equal(500);
      expect(res.body.error.code).to.equal('INTERNAL_ERROR');
      expect(JSON.stringify(res.body)).to.not.include('disk');
      sinon.restore();
      const retry = await service.post('/v1/vouchers', fixedVoucher('WRITEFAIL'));
      expect(retry.status, JSON.stringify(retry.body)).to.equal(201);
    });
  });

  describe('OpenAPI and request ids', () => {
    it('serves an OpenAPI 3.1 document listing every /vouchers path', async () => {
      const res = await service.get('/v1/openapi.json', { key: null });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      const doc = res.body;
      expect(doc.openapi).to.match(/^3\.1\.\d+$/);
      expect(doc.info.title).to.be.a('string').that.is.not.empty;
      expect(doc.info.version).to.be.a('string').that.is.not.empty;
      expect(doc.paths).to.include.all.keys(
        '/vouchers',
        '/vouchers/validate',
        '/vouchers/apply',
        '/vouchers/{voucher_id}',
        '/vouchers/{voucher_id}/applications',
        '/vouchers/applications/{application_id}/rollback',
      );
      expect(doc.paths['/vouchers']).to.include.all.keys('get', 'post');
      expect(doc.paths['/vouchers/{voucher_id}']).to.include.all.keys('get', 'put', 'delete');
      expect(doc.paths['/vouchers/validate']).to.have.property('post');
      expect(doc.paths['/vouchers/apply']).to.have.property('post');
      expect(doc.paths['/vouchers'].post.responses).to.have.property('201');
      expect(doc.paths['/vouchers/apply'].post.responses).to.include.all.keys('200', '201', '409');
      expect(doc.components.securitySchemes.bearer).to.deep.include({ type: 'http', scheme: 'bearer' });
      expect(doc.servers[0].url).to.match(/\/v1$/);
      // every $ref resolves
      const refs = JSON.stringify(doc).match(/"\$ref":"#\/components\/schemas\/[^"]+"/g) ?? [];
      expect(refs.length).to.be.greaterThan(0);
      for (const ref of refs) {
        const name = ref.split('/').pop()!.replace('"', '');
        expect(doc.components.schemas, name).to.have.property(name);
      }
    });

    it('echoes a sane X-Request-Id and makes one otherwise', async () => {
      const echoed = await service.get('/v1/vouchers', { headers: { 'X-Request-Id': 'abc-123_XYZ.9' } });
      expect(echoed.headers.get('x-request-id')).to.equal('abc-123_XYZ.9');
      const onError = await service.get('/v1/vouchers', { key: null, headers: { 'X-Request-Id': 'abc-401' } });
      expect(onError.status).to.equal(401);
      expect(onError.headers.get('x-request-id')).to.equal('abc-401');
      const made = await service.get('/v1/vouchers');
      expect(made.headers.get('x-request-id')).to.match(/^req_[0-9a-f]{32}$/);
      const insane = await service.get('/v1/vouchers', { headers: { 'X-Request-Id': 'has spaces<script>' } });
      expect(insane.headers.get('x-request-id')).to.match(/^req_[0-9a-f]{32}$/);
    });
  });
});
