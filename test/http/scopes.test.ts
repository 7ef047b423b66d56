/**
 * Scopes, route by route: every /v1 route names the one scope it needs (decisions.md,
 * "Authentication, permissions, rate limits"). A key holding every scope but that one gets 403
 * INSUFFICIENT_PERMISSIONS `{required_scope}` and changes nothing; a key holding only that scope
 * gets through. Keys stay bound to their environment whatever their scopes.
 */
import type { RequestHandler } from 'express';
import { expect } from 'chai';
import { ALL_SCOPES, type Scope } from '../../src/application/apiKeys.ts';
import type { Environment } from '../../src/application/context.ts';
import type { Guard } from '../../src/http/auth.ts';
import { apiRoutes, servedRoutes } from '../support/apiRoutes.ts';
import { applyBody, rollbackBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher, percentageVoucher } from '../fixtures/vouchers.ts';
import { waitForExport } from '../support/analyticsFixture.ts';
import { PRODUCTION_KEY, SANDBOX_KEY, TestService, type TestResponse } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface Prepared {
  path: string;
  body?: unknown;
  /** Checked after a denied call: the call must have changed nothing. */
  unchanged?: () => Promise<unknown>;
  /** Checked after an allowed call: the call did what the route does. */
  done?: (res: TestResponse) => unknown;
}

interface RouteCase {
  method: Method;
  /** The OpenAPI path template under /v1. */
  template: string;
  scope: Scope;
  /** Status of the valid request made with a key holding only `scope`. */
  allowed: number;
  /** Builds a valid request on fresh data (called once per test). */
  prepare: () => Promise<Prepared>;
}

/** Asserts the whole error body: `{error: {code, message, details}}` and nothing else. */

/** `/vouchers/:voucherId` and `/vouchers/{voucher_id}` both become `/vouchers/{}`. */
const normalise = (template: string): string => template.replace(/:[A-Za-z_]+|\{[A-Za-z_]+\}/g, '{}');

describe('HTTP scopes: every /v1 route requires its scope', () => {
  let service: TestService;
  let counter = 0;
  const unique = (prefix: string): string => `${prefix}${(counter += 1)}`;

  /** The voucher every read route looks at (10% off, created with the operator key). */
  let seed: { id: string; code: string };

  const webhooks: string[] = [];
  const admin = {
    createVoucher: async (): Promise<{ id: string; code: string }> => {
      const v = await service.createVoucher(percentageVoucher(unique('SCOPE'), { value: 10 }));
      return { id: v.id, code: v.code };
    },
    voucher: async (id: string): Promise<any> => {
      const res = await service.get(`/v1/vouchers/${id}`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body;
    },
    /**
     * A webhook endpoint (to a host that never resolves: attempts fail, nothing leaves the machine).
     * The ones made for earlier routes are deleted first: an environment holds at most 16.
     */
    webhook: async (): Promise<{ id: string }> => {
      for (const id of webhooks.splice(0)) await service.delete(`/v1/webhooks/${id}`);
      const res = await service.post('/v1/webhooks', {
        url: `https://${unique('scopes')}.invalid/hook`,
        events: ['*'],
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      webhooks.push(res.body.id as string);
      return { id: res.body.id as string };
    },
    webhookDoc: async (id: string): Promise<TestResponse> => service.get(`/v1/webhooks/${id}`),
    apply: async (code: string): Promise<string> => {
      const res = await service.post('/v1/vouchers/apply', applyBody(code, unique('order-'), { value: 10_000 }));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return res.body.id as string;
    },
  };

  const ROUTES: RouteCase[] = [
    {
      method: 'POST',
      template: '/vouchers',
      scope: 'vouchers:write',
      allowed: 201,
      prepare: async () => {
        const code = unique('NEWCODE');
        return {
          path: '/v1/vouchers',
          body: fixedVoucher(code, { value: 500 }),
          unchanged: async () => {
            const res = await service.post('/v1/vouchers/validate', validateBody(code, { value: 10_000 }));
            expect(res.status, `the denied create made ${code}: ${JSON.stringify(res.body)}`).to.equal(404);
            expect(res.body.error.code).to.equal('VOUCHER_NOT_FOUND');
          },
          done: async (res) => {
            expect(res.body.code).to.equal(code);
            expect((await admin.voucher(res.body.id)).value).to.equal(500);
          },
        };
      },
    },
    {
      method: 'GET',
      template: '/vouchers',
      scope: 'vouchers:read',
      allowed: 200,
      prepare: async () => ({
        path: '/v1/vouchers?limit=100',
        done: (res) => {
          expect(res.body.data.map((v: { id: string }) => v.id)).to.include(seed.id);
        },
      }),
    },
    {
      method: 'POST',
      template: '/vouchers/validate',
      scope: 'vouchers:redeem',
      allowed: 200,
      prepare: async () => ({
        path: '/v1/vouchers/validate',
        body: validateBody(seed.code, { value: 10_000 }),
        done: (res) => {
          expect(res.body.is_valid).to.equal(true);
          expect(res.body.discount_amount).to.equal(1000);
        },
      }),
    },
    {
      method: 'POST',
      template: '/vouchers/apply',
      scope: 'vouchers:redeem',
      allowed: 201,
      prepare: async () => {
        const v = await admin.createVoucher();
        return {
          path: '/v1/vouchers/apply',
          body: applyBody(v.code, unique('order-'), { value: 10_000 }),
          unchanged: async () => {
            expect((await admin.voucher(v.id)).usage_count).to.equal(0);
          },
          done: async (res) => {
            expect(res.body.discount_amount).to.equal(1000);
            expect((await admin.voucher(v.id)).usage_count).to.equal(1);
          },
        };
      },
    },
    {
      method: 'POST',
      template: '/vouchers/applications/{application_id}/rollback',
      scope: 'vouchers:redeem',
      allowed: 200,
      prepare: async () => {
        const v = await admin.createVoucher();
        const applicationId = await admin.apply(v.code);
        return {
          path: `/v1/vouchers/applications/${applicationId}/rollback`,
          body: rollbackBody(),
          unchanged: async () => {
            expect((await admin.voucher(v.id)).usage_count).to.equal(1);
          },
          done: async (res) => {
            expect(res.body.id).to.equal(applicationId);
            expect((await admin.voucher(v.id)).usage_count).to.equal(0);
          },
        };
      },
    },
    {
      method: 'GET',
      template: '/vouchers/{voucher_id}',
      scope: 'vouchers:read',
      allowed: 200,
      prepare: async () => ({
        path: `/v1/vouchers/${seed.id}`,
        done: (res) => {
          expect(res.body.code).to.equal(seed.code);
        },
      }),
    },
    {
      method: 'GET',
      template: '/vouchers/{voucher_id}/applications',
      scope: 'vouchers:read',
      allowed: 200,
      prepare: async () => ({
        path: `/v1/vouchers/${seed.id}/applications`,
        done: (res) => {
          expect(res.body.data).to.be.an('array');
        },
      }),
    },
    {
      method: 'PUT',
      template: '/vouchers/{voucher_id}',
      scope: 'vouchers:write',
      allowed: 200,
      prepare: async () => {
        const v = await admin.createVoucher();
        return {
          path: `/v1/vouchers/${v.id}`,
          body: { value: 25 },
          unchanged: async () => {
            expect((await admin.voucher(v.id)).value).to.equal(10);
          },
          done: async () => {
            expect((await admin.voucher(v.id)).value).to.equal(25);
          },
        };
      },
    },
    {
      method: 'DELETE',
      template: '/vouchers/{voucher_id}',
      scope: 'vouchers:delete',
      allowed: 200,
      prepare: async () => {
        const v = await admin.createVoucher();
        return {
          path: `/v1/vouchers/${v.id}`,
          unchanged: async () => {
            expect((await admin.voucher(v.id)).status).to.equal('active');
          },
          done: async () => {
            expect((await admin.voucher(v.id)).status).to.equal('inactive');
          },
        };
      },
    },
    ...(['performance', 'trends', 'customers'] as const).map((report): RouteCase => ({
      method: 'GET',
      template: `/analytics/vouchers/{voucher_id}/${report}`,
      scope: 'analytics:read',
      allowed: 200,
      prepare: async () => ({
        path: `/v1/analytics/vouchers/${seed.id}/${report}`,
        done: (res) => {
          expect(res.body.voucher_id).to.equal(seed.id);
        },
      }),
    })),
    {
      method: 'POST',
      template: '/analytics/export',
      scope: 'analytics:read',
      allowed: 202,
      prepare: async () => ({
        path: '/v1/analytics/export',
        body: { voucher_ids: [seed.id], metrics: ['uses'] },
        done: async (res) => {
          expect(res.body.status).to.equal('processing');
          expect((await service.get(`/v1/analytics/export/${res.body.export_id}`)).body.export_id).to.equal(
            res.body.export_id,
          );
        },
      }),
    },
    {
      method: 'GET',
      template: '/analytics/export/{export_id}',
      scope: 'analytics:read',
      allowed: 200,
      prepare: async () => {
        const id = (await service.post('/v1/analytics/export', { voucher_ids: [seed.id], metrics: ['uses'] })).body
          .export_id as string;
        return {
          path: `/v1/analytics/export/${id}`,
          done: (res) => {
            expect(res.body.export_id).to.equal(id);
          },
        };
      },
    },
    {
      method: 'GET',
      template: '/analytics/export/{export_id}/download',
      scope: 'analytics:read',
      allowed: 200,
      prepare: async () => {
        const id = (await service.post('/v1/analytics/export', { voucher_ids: [seed.id], metrics: ['uses'] })).body
          .export_id as string;
        await waitForExport(() => service.get(`/v1/analytics/export/${id}`));
        return {
          path: `/v1/analytics/export/${id}/download`,
          done: (res) => {
            expect(String(res.body)).to.match(/^voucher_id,code,date,uses\n/);
          },
        };
      },
    },
    {
      method: 'POST',
      template: '/webhooks',
      scope: 'webhooks:manage',
      allowed: 201,
      prepare: async () => {
        const url = `https://${unique('new')}.invalid/hook`;
        const listed = async () =>
          ((await service.get('/v1/webhooks?limit=100')).body.data as Array<{ url: string }>).map((e) => e.url);
        return {
          path: '/v1/webhooks',
          body: { url, events: ['voucher.applied'] },
          unchanged: async () => expect(await listed()).to.not.include(url),
          done: async (res) => {
            expect(res.body.secret).to.match(/^whsec_/);
            expect(await listed()).to.include(url);
          },
        };
      },
    },
    {
      method: 'GET',
      template: '/webhooks',
      scope: 'webhooks:manage',
      allowed: 200,
      prepare: async () => {
        const w = await admin.webhook();
        return { path: '/v1/webhooks?limit=100', done: (res) => expect(JSON.stringify(res.body)).to.include(w.id) };
      },
    },
    {
      method: 'GET',
      template: '/webhooks/{webhook_id}',
      scope: 'webhooks:manage',
      allowed: 200,
      prepare: async () => {
        const w = await admin.webhook();
        return { path: `/v1/webhooks/${w.id}`, done: (res) => expect(res.body.id).to.equal(w.id) };
      },
    },
    {
      method: 'PATCH',
      template: '/webhooks/{webhook_id}',
      scope: 'webhooks:manage',
      allowed: 200,
      prepare: async () => {
        const w = await admin.webhook();
        return {
          path: `/v1/webhooks/${w.id}`,
          body: { description: 'patched' },
          unchanged: async () => expect((await admin.webhookDoc(w.id)).body.description).to.equal(null),
          done: async () => expect((await admin.webhookDoc(w.id)).body.description).to.equal('patched'),
        };
      },
    },
    {
      method: 'DELETE',
      template: '/webhooks/{webhook_id}',
      scope: 'webhooks:manage',
      allowed: 200,
      prepare: async () => {
        const w = await admin.webhook();
        return {
          path: `/v1/webhooks/${w.id}`,
          unchanged: async () => expect((await admin.webhookDoc(w.id)).status).to.equal(200),
          done: async () => expect((await admin.webhookDoc(w.id)).status).to.equal(404),
        };
      },
    },
    {
      method: 'POST',
      template: '/webhooks/{webhook_id}/rotate-secret',
      scope: 'webhooks:manage',
      allowed: 200,
      prepare: async () => {
        const w = await admin.webhook();
        return {
          path: `/v1/webhooks/${w.id}/rotate-secret`,
          done: (res) => expect(res.body.secret).to.match(/^whsec_/),
        };
      },
    },
    {
      method: 'GET',
      template: '/webhooks/{webhook_id}/deliveries',
      scope: 'webhooks:manage',
      allowed: 200,
      prepare: async () => {
        const w = await admin.webhook();
        return { path: `/v1/webhooks/${w.id}/deliveries`, done: (res) => expect(res.body.data).to.be.an('array') };
      },
    },
    {
      method: 'POST',
      template: '/webhooks/{webhook_id}/deliveries/{delivery_id}/resend',
      scope: 'webhooks:manage',
      allowed: 202,
      prepare: async () => {
        const w = await admin.webhook();
        const test = await service.post(`/v1/webhooks/${w.id}/test`);
        return {
          path: `/v1/webhooks/${w.id}/deliveries/${test.body.id}/resend`,
          done: (res) => expect(res.body.id).to.equal(test.body.id),
        };
      },
    },
    {
      method: 'POST',
      template: '/webhooks/{webhook_id}/recover',
      scope: 'webhooks:manage',
      allowed: 202,
      prepare: async () => {
        const w = await admin.webhook();
        return {
          path: `/v1/webhooks/${w.id}/recover`,
          body: { since: '2026-01-01T00:00:00Z' },
          done: (res) => expect(res.body.recovered).to.be.a('number'),
        };
      },
    },
    {
      method: 'POST',
      template: '/webhooks/{webhook_id}/test',
      scope: 'webhooks:manage',
      allowed: 202,
      prepare: async () => {
        const w = await admin.webhook();
        const deliveries = async () => (await service.get(`/v1/webhooks/${w.id}/deliveries`)).body.total as number;
        return {
          path: `/v1/webhooks/${w.id}/test`,
          unchanged: async () => expect(await deliveries()).to.equal(0),
          done: async (res) => {
            expect(res.body.event_type).to.equal('webhook.test');
            expect(await deliveries()).to.equal(1);
          },
        };
      },
    },
  ];

  const keyWith = async (scopes: Scope[], name: string, environment: Environment = 'sandbox'): Promise<string> =>
    (await service.embedded.keys.create(environment, name, scopes)).key;

  before(async () => {
    service = await TestService.start();
    seed = await admin.createVoucher();
  });
  after(async () => {
    await service.stop();
  });

  describe('the table', () => {
    it('names every route the API documents, with the scope the OpenAPI document gives it', async () => {
      const res = await service.get('/v1/openapi.json', { key: null });
      expect(res.status).to.equal(200);
      const documented: Record<string, string> = {};
      for (const [template, operations] of Object.entries(
        res.body.paths as Record<string, Record<string, { 'x-scope'?: string }>>,
      )) {
        if ('servers' in operations) continue; // the operator's endpoints at the root take no API key
        for (const [method, operation] of Object.entries(operations)) {
          if (['get', 'post', 'put', 'delete', 'patch'].includes(method))
            documented[`${method.toUpperCase()} ${template}`] = String(operation['x-scope']);
        }
      }
      const table = Object.fromEntries(ROUTES.map((r) => [`${r.method} ${r.template}`, r.scope]));
      expect(table).to.deep.equal(documented);
    });

    it('names every route the voucher and analytics routers serve, with the scope its guard checks', () => {
      // A guard that marks its middleware with the scope, so each route of the router tells its scope.
      const guard = ((scope: Scope) => {
        const marker: RequestHandler & { scope?: Scope } = (_req, _res, next) => next();
        marker.scope = scope;
        return marker;
      }) as unknown as Guard;
      const served = servedRoutes<{ scope?: Scope }>(apiRoutes(guard).stack).map((route) => [
        `${route.method} ${normalise(route.path)}`,
        route.first.scope,
      ]);
      expect(served).to.have.length(ROUTES.length);
      expect(Object.fromEntries(served)).to.deep.equal(
        Object.fromEntries(ROUTES.map((r) => [`${r.method} ${normalise(r.template)}`, r.scope])),
      );
    });

    it('uses only known scopes, and every voucher and analytics scope guards at least one route', () => {
      for (const r of ROUTES) expect(ALL_SCOPES).to.include(r.scope);
      expect([...new Set(ROUTES.map((r) => r.scope))]).to.have.members([
        'vouchers:read',
        'vouchers:write',
        'vouchers:delete',
        'vouchers:redeem',
        'analytics:read',
        'webhooks:manage',
      ]);
    });
  });

  for (const route of ROUTES) {
    describe(`${route.method} /v1${route.template} (${route.scope})`, () => {
      it(`is 403 INSUFFICIENT_PERMISSIONS {required_scope: ${route.scope}} for a key with every other scope, and changes nothing`, async () => {
        const others = ALL_SCOPES.filter((s) => s !== route.scope);
        expect(others).to.have.length(ALL_SCOPES.length - 1);
        const key = await keyWith(others, `all but ${route.scope}`);
        const request = await route.prepare();
        const res = await service.request(route.method, request.path, request.body, { key });
        expectError(res, 403, 'INSUFFICIENT_PERMISSIONS', { required_scope: route.scope });
        await request.unchanged?.();
      });

      it(`gets through with a key holding only ${route.scope} (${route.allowed})`, async () => {
        const key = await keyWith([route.scope], `only ${route.scope}`);
        const request = await route.prepare();
        const res = await service.request(route.method, request.path, request.body, { key });
        expect(res.status, JSON.stringify(res.body)).to.equal(route.allowed);
        await request.done?.(res);
      });

      if (route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH') {
        it('checks the scope before the body: an invalid body is 403 without the scope, 400 with it', async () => {
          const request = await route.prepare();
          const invalid = { not_a_field: true };
          const denied = await service.request(route.method, request.path, invalid, {
            key: await keyWith(
              ALL_SCOPES.filter((s) => s !== route.scope),
              'denied',
            ),
          });
          expectError(denied, 403, 'INSUFFICIENT_PERMISSIONS', { required_scope: route.scope });
          const allowed = await service.request(route.method, request.path, invalid, {
            key: await keyWith([route.scope], 'allowed'),
          });
          expect(allowed.status, JSON.stringify(allowed.body)).to.equal(400);
          expect(allowed.body.error.code).to.equal('INVALID_REQUEST');
        });
      }
    });
  }

  it('answers 403 only for the missing scope: the key without vouchers:write still reads', async () => {
    const key = await keyWith(
      ALL_SCOPES.filter((s) => s !== 'vouchers:write'),
      'reader',
    );
    const read = await service.get(`/v1/vouchers/${seed.id}`, { key });
    expect(read.status).to.equal(200);
    const write = await service.put(`/v1/vouchers/${seed.id}`, { value: 11 }, { key });
    expectError(write, 403, 'INSUFFICIENT_PERMISSIONS', { required_scope: 'vouchers:write' });
  });

  describe('environments: scopes never cross them', () => {
    let production: { id: string; code: string };
    const PROD_CODE = 'PRODONLY42';

    before(async () => {
      const v = await service.createVoucher(fixedVoucher(PROD_CODE, { value: 700 }), { key: PRODUCTION_KEY });
      production = { id: v.id, code: v.code };
    });

    const expectProductionUntouched = async (): Promise<void> => {
      const res = await service.get(`/v1/vouchers/${production.id}`, { key: PRODUCTION_KEY });
      expect(res.status).to.equal(200);
      expect(res.body.value).to.equal(700);
      expect(res.body.status).to.equal('active');
      expect(res.body.usage_count).to.equal(0);
    };

    it('a sandbox key with every scope gets 404 VOUCHER_NOT_FOUND for a production voucher, on every voucher route', async () => {
      const key = await keyWith([...ALL_SCOPES], 'sandbox, all scopes');
      const notFound = { voucher_id: production.id };
      expectError(await service.get(`/v1/vouchers/${production.id}`, { key }), 404, 'VOUCHER_NOT_FOUND', notFound);
      expectError(
        await service.get(`/v1/vouchers/${production.id}/applications`, { key }),
        404,
        'VOUCHER_NOT_FOUND',
        notFound,
      );
      expect((await service.put(`/v1/vouchers/${production.id}`, { value: 1 }, { key })).status).to.equal(404);
      expect((await service.delete(`/v1/vouchers/${production.id}`, { key })).status).to.equal(404);

      const validate = await service.post('/v1/vouchers/validate', validateBody(PROD_CODE, { value: 10_000 }), { key });
      expect(validate.status, JSON.stringify(validate.body)).to.equal(404);
      expect(validate.body.error.code).to.equal('VOUCHER_NOT_FOUND');
      expect(JSON.stringify(validate.body)).to.not.include(production.id);
      const apply = await service.post('/v1/vouchers/apply', applyBody(PROD_CODE, 'cross-1', { value: 10_000 }), {
        key,
      });
      expect(apply.status, JSON.stringify(apply.body)).to.equal(404);
      expect(apply.body.error.code).to.equal('VOUCHER_NOT_FOUND');

      await expectProductionUntouched();
    });

    it('a sandbox key with every scope does not see production vouchers in the list', async () => {
      const key = await keyWith([...ALL_SCOPES], 'sandbox lister');
      const res = await service.get('/v1/vouchers?limit=100', { key });
      expect(res.status).to.equal(200);
      const ids = (res.body.data as Array<{ id: string; code: string }>).map((v) => v.id);
      expect(res.body.total).to.equal(ids.length); // the whole sandbox fits in one page, so this is all of it
      expect(ids).to.include(seed.id);
      expect(ids).to.not.include(production.id);
      expect((res.body.data as Array<{ code: string }>).map((v) => v.code)).to.not.include(PROD_CODE);

      const prod = await service.get('/v1/vouchers?limit=100', { key: PRODUCTION_KEY });
      expect((prod.body.data as Array<{ id: string }>).map((v) => v.id))
        .to.include(production.id)
        .and.not.include(seed.id);
    });

    it('a key with fewer scopes is still bound to its environment', async () => {
      const sandboxReader = await keyWith(['vouchers:read'], 'sandbox reader');
      expectError(
        await service.get(`/v1/vouchers/${production.id}`, { key: sandboxReader }),
        404,
        'VOUCHER_NOT_FOUND',
        { voucher_id: production.id },
      );
      expect((await service.get(`/v1/vouchers/${seed.id}`, { key: sandboxReader })).status).to.equal(200);

      const productionReader = await keyWith(['vouchers:read'], 'production reader', 'production');
      const own = await service.get(`/v1/vouchers/${production.id}`, { key: productionReader });
      expect(own.status).to.equal(200);
      expect(own.body.code).to.equal(PROD_CODE);
      expectError(await service.get(`/v1/vouchers/${seed.id}`, { key: productionReader }), 404, 'VOUCHER_NOT_FOUND', {
        voucher_id: seed.id,
      });
      const list = await service.get('/v1/vouchers?limit=100', { key: productionReader });
      expect((list.body.data as Array<{ id: string }>).map((v) => v.id))
        .to.include(production.id)
        .and.not.include(seed.id);
      // and its scopes still apply in its own environment
      expectError(
        await service.delete(`/v1/vouchers/${production.id}`, { key: productionReader }),
        403,
        'INSUFFICIENT_PERMISSIONS',
        { required_scope: 'vouchers:delete' },
      );

      const sandboxRedeemer = await keyWith(['vouchers:redeem'], 'sandbox redeemer');
      const validate = await service.post('/v1/vouchers/validate', validateBody(PROD_CODE, { value: 10_000 }), {
        key: sandboxRedeemer,
      });
      expect(validate.status).to.equal(404);
      expect(validate.body.error.code).to.equal('VOUCHER_NOT_FOUND');
      await expectProductionUntouched();
    });

    it('the same code can exist in both environments, each key seeing its own', async () => {
      const sandboxWriter = await keyWith(['vouchers:write', 'vouchers:redeem'], 'sandbox writer');
      const created = await service.post('/v1/vouchers', fixedVoucher(PROD_CODE, { value: 300 }), {
        key: sandboxWriter,
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      expect(created.body.id).to.not.equal(production.id);
      const sandboxQuote = await service.post('/v1/vouchers/validate', validateBody(PROD_CODE, { value: 10_000 }), {
        key: sandboxWriter,
      });
      expect(sandboxQuote.body.voucher.id).to.equal(created.body.id);
      expect(sandboxQuote.body.discount_amount).to.equal(300);
      const productionQuote = await service.post('/v1/vouchers/validate', validateBody(PROD_CODE, { value: 10_000 }), {
        key: PRODUCTION_KEY,
      });
      expect(productionQuote.body.voucher.id).to.equal(production.id);
      expect(productionQuote.body.discount_amount).to.equal(700);
      // the operator's sandbox key is sandbox too
      expect((await service.get(`/v1/vouchers/${production.id}`, { key: SANDBOX_KEY })).status).to.equal(404);
    });
  });
});
