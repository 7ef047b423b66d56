/**
 * The OpenAPI document served at GET /v1/openapi.json against what the service really does:
 * its request schemas are the very objects ajv compiles for each route (src/http/routes/*.ts pass
 * `schemas.*` to compileBody / compileQuery, and openapi.ts puts the same objects in the document
 * untransformed), and the error responses it lists are the ones the routes answer.
 */
import { AssertionError, expect } from 'chai';
import sinon from 'sinon';
import * as schemas from '../../src/http/schemas.ts';
import { exportSchema } from '../../src/http/routes/analytics.ts';
import { createWebhookSchema, recoverSchema, updateWebhookSchema } from '../../src/http/webhookSchemas.ts';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';
import { expectError, expectMatchesOpenApi } from '../support/httpClient.ts';
import { loseEveryRace } from '../support/races.ts';

type Json = Record<string, any>;

/** The codes an error response lists: openapi.ts writes them as "… Codes: A, B." in the description. */
const codesOf = (response: Json | undefined): string[] => {
  const match = /Codes?: ([A-Z_]+(?:, [A-Z_]+)*)[.;]/.exec(String(response?.description ?? ''));
  return match ? match[1]!.split(', ') : [];
};

/**
 * Each operation with a JSON body, the schema object its route compiles with ajv (routes/vouchers.ts:
 * parseCreate, parseUpdate, parseValidate, parseApply, parseRollback; routes/analytics.ts: parseExport),
 * a request path for it, and a body that passes the schema's shape (ids and codes that exist nowhere:
 * every route validates its body before it looks anything up).
 */
const BODY_OPERATIONS = [
  {
    template: '/vouchers',
    method: 'post',
    schema: schemas.createVoucherSchema,
    required: true,
    path: '/v1/vouchers',
    body: fixedVoucher('OAS_SHAPE'),
  },
  {
    template: '/vouchers/{voucher_id}',
    method: 'put',
    schema: schemas.updateVoucherSchema,
    required: true,
    path: '/v1/vouchers/v_OasNoSuchVoucher1',
    body: { status: 'active' },
  },
  {
    template: '/vouchers/validate',
    method: 'post',
    schema: schemas.validateSchema,
    required: true,
    path: '/v1/vouchers/validate',
    body: validateBody('OAS_NONE'),
  },
  {
    template: '/vouchers/apply',
    method: 'post',
    schema: schemas.applySchema,
    required: true,
    path: '/v1/vouchers/apply',
    body: { code: 'OAS_NONE', order_id: 'oas-order-1' },
  },
  {
    template: '/vouchers/applications/{application_id}/rollback',
    method: 'post',
    schema: schemas.rollbackSchema,
    required: false,
    path: '/v1/vouchers/applications/va_OasNoSuchApplication1/rollback',
    body: { reason: 'test' },
  },
] as const;
const VOUCHER_BODY_OPERATIONS = BODY_OPERATIONS.map(({ method, template }) => `${method.toUpperCase()} ${template}`);
const EXPORT_OPERATION = {
  template: '/analytics/export',
  method: 'post',
  schema: exportSchema,
  required: true,
  path: '/v1/analytics/export',
  body: { voucher_ids: ['v_OasNoSuchVoucher1'], metrics: ['uses'] },
};
/** The webhook operations with a JSON body (routes/webhooks.ts: parseCreate, parseUpdate, parseRecover). */
const WEBHOOK_OPERATIONS = [
  {
    template: '/webhooks',
    method: 'post',
    schema: createWebhookSchema,
    required: true,
    path: '/v1/webhooks',
    body: { url: 'https://oas.example.com/', events: ['*'] },
  },
  {
    template: '/webhooks/{webhook_id}',
    method: 'patch',
    schema: updateWebhookSchema,
    required: true,
    path: '/v1/webhooks/we_OasNoSuchEndpoint1',
    body: { status: 'disabled' },
  },
  {
    template: '/webhooks/{webhook_id}/recover',
    method: 'post',
    schema: recoverSchema,
    required: true,
    path: '/v1/webhooks/we_OasNoSuchEndpoint1/recover',
    body: { since: '2026-01-01T00:00:00Z' },
  },
] as const;
const ALL_BODY_OPERATIONS = [...BODY_OPERATIONS, EXPORT_OPERATION, ...WEBHOOK_OPERATIONS];

describe('OpenAPI document: request schemas and error responses agree with the service', () => {
  let service: TestService;
  let doc: Json;

  before(async () => {
    service = await TestService.start();
    const res = await service.get('/v1/openapi.json', { key: null });
    expect(res.status).to.equal(200);
    doc = res.body;
  });
  after(async () => {
    await service.stop();
  });
  afterEach(() => {
    sinon.restore();
  });

  const operation = (template: string, method: string): Json => {
    const op = doc.paths[template]?.[method];
    expect(op, `${method.toUpperCase()} ${template} is documented`).to.be.an('object');
    return op;
  };

  const send = (method: string, path: string, body: unknown) => service.request(method.toUpperCase(), path, body);

  describe('request schemas', () => {
    it('serves, as the request body schema of each operation with a JSON body, exactly the schema object ajv compiles for its route', () => {
      for (const { template, method, schema, required } of ALL_BODY_OPERATIONS) {
        const route = `${method.toUpperCase()} ${template}`;
        const requestBody = operation(template, method).requestBody;
        expect(requestBody, route).to.be.an('object');
        expect(Object.keys(requestBody.content), route).to.deep.equal(['application/json']);
        expect(requestBody.content['application/json'].schema, route).to.deep.equal(schema);
        expect(requestBody.required, `${route} requestBody.required`).to.equal(required);
      }
    });

    it('derives the query parameters of GET /vouchers and GET /vouchers/{voucher_id}/applications from the query schemas ajv compiles', () => {
      const cases = [
        { template: '/vouchers', schema: schemas.listVouchersQuery },
        { template: '/vouchers/{voucher_id}/applications', schema: schemas.pageQuery },
        { template: '/vouchers/{voucher_id}', schema: schemas.emptyQuery },
      ];
      for (const { template, schema } of cases) {
        const query = ((operation(template, 'get').parameters ?? []) as Json[]).filter((p) => p.in === 'query');
        const properties = schema.properties as Record<string, object>;
        const required = ('required' in schema ? schema.required : []) as string[];
        expect(
          query.map((p) => p.name),
          template,
        ).to.deep.equal(Object.keys(properties));
        for (const parameter of query) {
          expect(parameter.schema, `${template} ?${parameter.name}`).to.deep.equal(properties[parameter.name]);
          expect(parameter.required, `${template} ?${parameter.name} required`).to.equal(
            required.includes(parameter.name),
          );
        }
      }
    });

    it('agrees with the validator: a member the served schema does not list, or a member it requires left out, is 400 INVALID_REQUEST naming it; every member it lists is allowed', async () => {
      for (const { template, method, path, body } of ALL_BODY_OPERATIONS) {
        const route = `${method.toUpperCase()} ${template}`;
        const served = operation(template, method).requestBody.content['application/json'].schema as Json;
        const listed = Object.keys(served.properties);

        // additionalProperties: false in the document → the API rejects an unlisted member by name
        expect(served.additionalProperties, route).to.equal(false);
        expect(listed, route).to.not.include('not_in_the_document');
        const unknown = await send(method, path, { ...body, not_in_the_document: 1 });
        expect(unknown.status, `${route} ${JSON.stringify(unknown.body)}`).to.equal(400);
        expect(unknown.body.error.code, route).to.equal('INVALID_REQUEST');
        expect(unknown.body.error.details, route).to.deep.include({
          field: 'not_in_the_document',
          message: 'is not allowed',
        });

        // required in the document → the API rejects the body without it, by name
        for (const member of (served.required ?? []) as string[]) {
          const { [member]: _left, ...without } = body as Record<string, unknown>;
          const res = await send(method, path, without);
          expect(res.status, `${route} without ${member}`).to.equal(400);
          expect(res.body.error.code, `${route} without ${member}`).to.equal('INVALID_REQUEST');
          expect(res.body.error.details, `${route} without ${member}`).to.deep.include({
            field: member,
            message: 'is required',
          });
        }

        // every member the document lists passes the additionalProperties check (its value may still be wrong)
        const everything = await send(method, path, Object.fromEntries(listed.map((name) => [name, null])));
        const problems = Array.isArray(everything.body?.error?.details)
          ? (everything.body.error.details as Json[])
          : [];
        expect(
          problems.filter((p) => p.message === 'is not allowed'),
          route,
        ).to.deep.equal([]);
      }
      // the create schema the document serves requires exactly code and type
      expect(operation('/vouchers', 'post').requestBody.content['application/json'].schema.required).to.deep.equal([
        'code',
        'type',
      ]);
    });
  });

  describe('error responses', () => {
    const expectListed = (template: string, method: string, status: number, code: string): void => {
      const response = operation(template, method).responses[String(status)];
      expect(response, `${method.toUpperCase()} ${template} ${status}`).to.be.an('object');
      expect(
        response.content['application/json'].schema,
        `${method.toUpperCase()} ${template} ${status}`,
      ).to.deep.equal({ $ref: '#/components/schemas/Error' });
      expect(codesOf(response), `${method.toUpperCase()} ${template} ${status}`).to.include(code);
    };

    const expectAnswer = (res: { status: number; body: any }, status: number, code: string, what: string): void => {
      expect(res.status, `${what} ${JSON.stringify(res.body)}`).to.equal(status);
      expect(res.body.error.code, what).to.equal(code);
    };

    it('lists 413 PAYLOAD_TOO_LARGE and 415 UNSUPPORTED_MEDIA_TYPE on every operation with a JSON body, and the service answers them there', async () => {
      const withBody: string[] = [];
      for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
        for (const [method, op] of Object.entries(item))
          if (op?.requestBody) withBody.push(`${method.toUpperCase()} ${template}`);
      }
      expect(withBody.sort()).to.deep.equal(
        [
          ...VOUCHER_BODY_OPERATIONS,
          'POST /analytics/export',
          ...WEBHOOK_OPERATIONS.map(({ method, template }) => `${method.toUpperCase()} ${template}`),
        ].sort(),
      );

      const tooLarge = JSON.stringify({ padding: 'x'.repeat(1_100_000) });
      for (const { template, method, path, body } of ALL_BODY_OPERATIONS) {
        const route = `${method.toUpperCase()} ${template}`;
        expectListed(template, method, 413, 'PAYLOAD_TOO_LARGE');
        expectListed(template, method, 415, 'UNSUPPORTED_MEDIA_TYPE');
        const big = await service.request(method.toUpperCase(), path, undefined, {
          raw: tooLarge,
          headers: { 'Content-Type': 'application/json' },
        });
        expectAnswer(big, 413, 'PAYLOAD_TOO_LARGE', `${route} over 1 MB`);
        expect(big.body.error.details, route).to.deep.equal({ max_bytes: 1_048_576 });
        const text = await service.request(method.toUpperCase(), path, undefined, {
          raw: JSON.stringify(body),
          headers: { 'Content-Type': 'text/plain' },
        });
        expectAnswer(text, 415, 'UNSUPPORTED_MEDIA_TYPE', `${route} as text/plain`);
      }
    });

    it('lists 409 CONCURRENT_MODIFICATION on PUT and DELETE /vouchers/{voucher_id} and on rollback, and the service answers it when every write loses the race', async () => {
      for (const [template, method] of [
        ['/vouchers/{voucher_id}', 'put'],
        ['/vouchers/{voucher_id}', 'delete'],
        ['/vouchers/applications/{application_id}/rollback', 'post'],
        ['/vouchers/apply', 'post'],
      ] as const) {
        expectListed(template, method, 409, 'CONCURRENT_MODIFICATION');
      }
      const voucher = await service.createVoucher(fixedVoucher('OAS_RACE'));
      const applied = await service.post('/v1/vouchers/apply', applyBody('OAS_RACE', 'oas-race-1'));
      expect(applied.status, JSON.stringify(applied.body)).to.equal(201);

      loseEveryRace(service.sandbox.events);
      expectAnswer(
        await service.put(`/v1/vouchers/${voucher.id}`, { value: 200 }),
        409,
        'CONCURRENT_MODIFICATION',
        'PUT',
      );
      expectAnswer(await service.delete(`/v1/vouchers/${voucher.id}`), 409, 'CONCURRENT_MODIFICATION', 'DELETE');
      expectAnswer(
        await service.post(`/v1/vouchers/applications/${applied.body.id}/rollback`, {}),
        409,
        'CONCURRENT_MODIFICATION',
        'rollback',
      );
      sinon.restore();
      expect((await service.put(`/v1/vouchers/${voucher.id}`, { value: 200 })).status).to.equal(200);
    });

    it('lists 400 INVALID_REQUEST where a route validates a body or query that had no 400: rollback, GET /vouchers/{voucher_id}, GET /vouchers/{voucher_id}/applications, the export reads', async () => {
      const voucher = await service.createVoucher(fixedVoucher('OAS_QUERY'));
      const cases = [
        {
          template: '/vouchers/applications/{application_id}/rollback',
          method: 'post',
          request: () =>
            service.post('/v1/vouchers/applications/va_OasNoSuchApplication1/rollback', { reason: 'x'.repeat(501) }),
        },
        {
          template: '/vouchers/{voucher_id}',
          method: 'get',
          request: () => service.get(`/v1/vouchers/${voucher.id}?expand=all`),
        },
        {
          template: '/vouchers/{voucher_id}/applications',
          method: 'get',
          request: () => service.get(`/v1/vouchers/${voucher.id}/applications?limit=0`),
        },
        {
          template: '/analytics/export/{export_id}',
          method: 'get',
          request: () => service.get('/v1/analytics/export/export_OasNoSuchExport1?x=1'),
        },
        {
          template: '/analytics/export/{export_id}/download',
          method: 'get',
          request: () => service.get('/v1/analytics/export/export_OasNoSuchExport1/download?x=1'),
        },
      ];
      for (const { template, method, request } of cases) {
        expectListed(template, method, 400, 'INVALID_REQUEST');
        expectAnswer(await request(), 400, 'INVALID_REQUEST', `${method.toUpperCase()} ${template}`);
      }
    });

    it('lists 400 INVALID_REQUEST on every operation with a path parameter, and answers a path that is not percent-encoded UTF-8 with it (not 500), with or without a key', async () => {
      const withParameter: string[] = [];
      for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
        if (!template.includes('{')) continue;
        for (const [method, op] of Object.entries(item)) {
          if (!op?.responses) continue;
          withParameter.push(`${method.toUpperCase()} ${template}`);
          expectListed(template, method, 400, 'INVALID_REQUEST');
          // an incomplete escape, a byte that is no UTF-8, a lone surrogate's bytes
          for (const segment of ['%zz', '%', '%FF', '%ED%A0%80']) {
            const path = `/v1${template.replace(/\{\w+\}/, segment)}`;
            for (const key of [undefined, null]) {
              const res = await service.request(method.toUpperCase(), path, undefined, { key });
              expectError(res, 400, 'INVALID_REQUEST', [
                { field: 'path', message: 'is not valid percent-encoded UTF-8' },
              ]);
            }
          }
        }
      }
      expect(withParameter).to.include.members([
        'GET /vouchers/{voucher_id}',
        'PUT /vouchers/{voucher_id}',
        'DELETE /vouchers/{voucher_id}',
        'GET /vouchers/{voucher_id}/applications',
        'POST /vouchers/applications/{application_id}/rollback',
        'GET /analytics/vouchers/{voucher_id}/performance',
        'GET /analytics/vouchers/{voucher_id}/trends',
        'GET /analytics/vouchers/{voucher_id}/customers',
        'GET /analytics/export/{export_id}',
        'GET /analytics/export/{export_id}/download',
      ]);
    });

    it("lists 500 INTERNAL_ERROR on every operation, and keeps the export's own 500 EXPORT_FAILED", () => {
      for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
        for (const [method, op] of Object.entries(item)) {
          if (!op?.responses) continue;
          expectListed(template, method, 500, 'INTERNAL_ERROR');
        }
      }
      expectListed('/analytics/export', 'post', 500, 'EXPORT_FAILED');
    });

    it('lists 503 SERVICE_UNAVAILABLE with Retry-After on every API operation (a store server out of reach)', () => {
      for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
        if (item.servers) continue; // the operator's endpoints at the root: /readyz has its own 503, /healthz reads no store
        for (const [method, op] of Object.entries(item)) {
          if (!op?.responses) continue;
          expectListed(template, method, 503, 'SERVICE_UNAVAILABLE');
          expect(op.responses['503'].headers, `${method} ${template}`).to.have.property('Retry-After');
        }
      }
    });
  });

  describe('success responses', () => {
    const json = new Headers({ 'content-type': 'application/json; charset=utf-8' });

    it('declares a JSON schema for every 2xx answer of every operation (the download: one per format)', () => {
      for (const [template, item] of Object.entries(doc.paths as Record<string, Json>))
        for (const [method, op] of Object.entries(item)) {
          if (!op?.responses) continue;
          const success = Object.keys(op.responses).filter((status) => status.startsWith('2'));
          expect(success, `${method.toUpperCase()} ${template}`).to.not.be.empty;
          for (const status of success)
            expect(op.responses[status].content, `${method.toUpperCase()} ${template} ${status}`).to.be.an('object');
        }
    });

    it('the client fails a success body with a missing or mistyped member, and passes the real one', async () => {
      const created = await service.post('/v1/vouchers', fixedVoucher('OAS_BODY'));
      expect(created.status).to.equal(201);
      const voucherPath = `/v1/vouchers/${created.body.id}`;
      const fetched = await service.get(voucherPath);
      expect(() => expectMatchesOpenApi('GET', voucherPath, fetched)).to.not.throw();
      const { usage_count: _dropped, ...withoutUsage } = fetched.body;
      expect(() => expectMatchesOpenApi('GET', voucherPath, { ...fetched, body: withoutUsage })).to.throw(
        AssertionError,
        /usage_count/,
      );
      expect(() =>
        expectMatchesOpenApi('GET', voucherPath, { ...fetched, body: { ...fetched.body, usage_count: '0' } }),
      ).to.throw(AssertionError, /usage_count/);
      expect(() =>
        expectMatchesOpenApi('GET', '/v1/vouchers?limit=1', { status: 200, headers: json, body: { data: [] } }),
      ).to.throw(AssertionError, /total/);
      expect(() =>
        expectMatchesOpenApi('POST', '/v1/vouchers/validate', { status: 204, headers: json, body: {} }),
      ).to.throw(AssertionError, /lists no such response/);
    });
  });
});
