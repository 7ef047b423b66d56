/**
 * The /webhooks endpoints API (decisions.md, Webhooks): create (secret shown once), list,
 * retrieve, update, delete, rotate; every bad input answered in the spec's error shape naming
 * the field; endpoints belong to the key's environment.
 */
import { expect } from 'chai';
import { PRODUCTION_KEY, TestService } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';

const create = (service: TestService, body: Record<string, unknown>, key?: string) =>
  service.post('/v1/webhooks', body, key ? { key } : undefined);

describe('webhook endpoints API', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  it('creates an endpoint and shows its secret once: whsec_ + base64 of 32 bytes, never on retrieve or list', async () => {
    const res = await create(service, {
      url: 'https://hooks.example.com/in',
      events: ['voucher.applied', 'voucher.created'],
      description: 'orders',
      metadata: { team: 'checkout' },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({ url: 'https://hooks.example.com/in', description: 'orders', status: 'enabled' });
    expect(res.body.id).to.match(/^we_[A-Za-z0-9]{20}$/);
    expect(res.body.events).to.deep.equal(['voucher.applied', 'voucher.created']);
    expect(res.body.metadata).to.deep.equal({ team: 'checkout' });
    expect(res.headers.get('location')).to.equal(`/v1/webhooks/${res.body.id}`);
    const secret = String(res.body.secret);
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).to.have.length(32);

    const got = await service.get(`/v1/webhooks/${res.body.id}`);
    expect(got.status).to.equal(200);
    expect(got.body).to.not.have.property('secret');
    expect(JSON.stringify(got.body)).to.not.include(secret.slice(6));
    const list = await service.get('/v1/webhooks');
    expect(JSON.stringify(list.body)).to.not.include(secret.slice(6));
    expect(list.body.data.map((e: any) => e.id)).to.include(res.body.id);
  });

  it('lists newest first, paginated like the voucher list', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await create(service, { url: `https://h${i}.example.com/`, events: ['*'] })).body.id);
    const page = await service.get('/v1/webhooks?limit=2&offset=0');
    expect(page.status).to.equal(200);
    expect(page.body.data.map((e: any) => e.id)).to.deep.equal([ids[2], ids[1]]);
    expect(page.body).to.include({ limit: 2, offset: 0, has_more: true });
    const next = await service.get(`/v1/webhooks?limit=2&offset=2`);
    expect(next.body.data[0].id).to.equal(ids[0]);
    expect(next.body.total).to.equal(page.body.total);
    expectError(await service.get('/v1/webhooks?limit=0'), 400, 'INVALID_REQUEST');
  });

  it('updates url, events, description and status; deletes; then 404', async () => {
    const { body: made } = await create(service, { url: 'https://a.example.com/', events: ['voucher.created'] });
    const patched = await service.patch(`/v1/webhooks/${made.id}`, {
      url: 'https://b.example.com/x',
      events: ['*'],
      description: 'all',
      status: 'disabled',
    });
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body).to.include({ url: 'https://b.example.com/x', description: 'all', status: 'disabled' });
    expect(patched.body.events).to.deep.equal(['*']);
    expect((await service.get(`/v1/webhooks/${made.id}`)).body.status).to.equal('disabled');
    const enabled = await service.patch(`/v1/webhooks/${made.id}`, { status: 'enabled' });
    expect(enabled.body).to.include({ status: 'enabled', url: 'https://b.example.com/x' });

    const deleted = await service.delete(`/v1/webhooks/${made.id}`);
    expect(deleted.status).to.equal(200);
    expect(deleted.body).to.deep.equal({ id: made.id, deleted: true });
    expectError(await service.get(`/v1/webhooks/${made.id}`), 404, 'WEBHOOK_NOT_FOUND', { webhook_id: made.id });
    expectError(await service.delete(`/v1/webhooks/${made.id}`), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await service.patch(`/v1/webhooks/${made.id}`, { status: 'enabled' }), 404, 'WEBHOOK_NOT_FOUND');
    const list = await service.get('/v1/webhooks?limit=100');
    expect(list.body.data.map((e: any) => e.id)).to.not.include(made.id);
  });

  it('rotates the secret: a new one, and when the previous one stops signing (24 h later, by the injected clock)', async () => {
    const { body: made } = await create(service, { url: 'https://r.example.com/', events: ['*'] });
    const rotated = await service.post(`/v1/webhooks/${made.id}/rotate-secret`);
    expect(rotated.status, JSON.stringify(rotated.body)).to.equal(200);
    expect(rotated.body.secret)
      .to.match(/^whsec_/)
      .and.to.not.equal(made.secret);
    const expected = new Date(service.clock.now().getTime() + 24 * 3_600_000).toISOString().slice(0, 19) + 'Z';
    expect(rotated.body.previous_secret_expires_at).to.equal(expected);
    expectError(await service.post('/v1/webhooks/we_NoSuchEndpoint0000001/rotate-secret'), 404, 'WEBHOOK_NOT_FOUND');
  });

  it('answers every bad input with INVALID_REQUEST naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string, string?]> = [
      [{ url: 'not a url', events: ['*'] }, 'url'],
      [{ url: '/relative', events: ['*'] }, 'url'],
      [{ url: 'ftp://example.com/', events: ['*'] }, 'url'],
      [{ url: 'https://user:pw@example.com/', events: ['*'] }, 'url'],
      [{ url: 'https://127.0.0.1/', events: ['*'] }, 'url'],
      [{ url: 'https://[::1]/', events: ['*'] }, 'url'],
      [{ url: 'https://10.1.2.3/', events: ['*'] }, 'url'],
      [{ url: 'https://192.168.0.10:8443/', events: ['*'] }, 'url'],
      [{ url: 'https://169.254.169.254/latest', events: ['*'] }, 'url'],
      [{ url: 'https://100.64.0.1/', events: ['*'] }, 'url'],
      [{ url: 'https://[::ffff:10.0.0.1]/', events: ['*'] }, 'url'],
      [{ url: 'https://[fd00::1]/', events: ['*'] }, 'url'],
      [{ url: 'https://0x7f.1/', events: ['*'] }, 'url'],
      [{ url: 'https://224.0.0.1/', events: ['*'] }, 'url'],
      [{ url: 'https://example.com/', events: [] }, 'events'],
      [{ url: 'https://example.com/', events: ['voucher.applied', 'voucher.exploded'] }, 'events[1]'],
      [{ url: 'https://example.com/', events: 'voucher.applied' }, 'events'],
      [{ events: ['*'] }, 'url'],
      [{ url: 'https://example.com/' }, 'events'],
      [{ url: 'https://example.com/', events: ['*'], color: 'red' }, 'color'],
    ];
    for (const [body, field] of cases) {
      const res = await create(service, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(
        res.body.error.details.map((d: any) => d.field),
        JSON.stringify(body),
      ).to.include(field);
    }
    const { body: made } = await create(service, { url: 'https://ok.example.com/', events: ['*'] });
    for (const [body, field] of [
      [{ url: 'https://10.0.0.1/' }, 'url'],
      [{ events: [] }, 'events'],
      [{ status: 'paused' }, 'status'],
      [{}, 'body'],
    ] as const) {
      const res = await service.patch(`/v1/webhooks/${made.id}`, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(
        res.body.error.details.map((d: any) => d.field),
        JSON.stringify(body),
      ).to.include(field);
    }
    expect((await service.get(`/v1/webhooks/${made.id}`)).body.url).to.equal('https://ok.example.com/');
  });

  it('requires https in production and allows http in sandbox', async () => {
    const production = await create(service, { url: 'http://example.com/hook', events: ['*'] }, PRODUCTION_KEY);
    expectError(production, 400, 'INVALID_REQUEST');
    expect(production.body.error.details[0].field).to.equal('url');
    expect(production.body.error.details[0].message).to.include('https');
    expect((await create(service, { url: 'https://example.com/hook', events: ['*'] }, PRODUCTION_KEY)).status).to.equal(
      201,
    );
    expect((await create(service, { url: 'http://example.com/hook', events: ['*'] })).status).to.equal(201);
  });

  it("404s an unknown id, a malformed one, and another environment's endpoint", async () => {
    const { body: prod } = await create(service, { url: 'https://p.example.com/', events: ['*'] }, PRODUCTION_KEY);
    expectError(await service.get(`/v1/webhooks/${prod.id}`), 404, 'WEBHOOK_NOT_FOUND', { webhook_id: prod.id });
    expectError(await service.patch(`/v1/webhooks/${prod.id}`, { status: 'disabled' }), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await service.delete(`/v1/webhooks/${prod.id}`), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await service.post(`/v1/webhooks/${prod.id}/rotate-secret`), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await service.get('/v1/webhooks/we_NoSuchEndpoint0000001'), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await service.get('/v1/webhooks/nonsense'), 404, 'WEBHOOK_NOT_FOUND');
    const sandboxList = await service.get('/v1/webhooks?limit=100');
    expect(sandboxList.body.data.map((e: any) => e.id)).to.not.include(prod.id);
    expect((await service.get(`/v1/webhooks/${prod.id}`, { key: PRODUCTION_KEY })).status).to.equal(200);
  });

  it('needs the webhooks:manage scope', async () => {
    const { key } = await service.embedded.keys.create('sandbox', 'no webhooks', ['vouchers:read']);
    expectError(await service.get('/v1/webhooks', { key }), 403, 'INSUFFICIENT_PERMISSIONS', {
      required_scope: 'webhooks:manage',
    });
    expectError(
      await create(service, { url: 'https://x.example.com/', events: ['*'] }, key),
      403,
      'INSUFFICIENT_PERMISSIONS',
    );
  });
});

describe('webhook endpoints: at most 16 per environment', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  it('the 17th creation answers 400 naming the limit, also when sent at once; a deletion frees a place; the other environment has its own 16', async () => {
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create(service, { url: `https://cap${i}.example.com/`, events: ['*'] })),
    );
    const created = made.filter((r) => r.status === 201);
    expect(created, 'created of 20 sent at once').to.have.length(16);
    for (const refused of made.filter((r) => r.status !== 201)) {
      expectError(refused, 400, 'INVALID_REQUEST', [
        { field: 'body', message: 'at most 16 webhook endpoints per environment' },
      ]);
    }
    expect((await service.get('/v1/webhooks?limit=100')).body.total).to.equal(16);

    expect((await service.delete(`/v1/webhooks/${created[0]!.body.id}`)).status).to.equal(200);
    expect((await create(service, { url: 'https://again.example.com/', events: ['*'] })).status).to.equal(201);
    expectError(await create(service, { url: 'https://over.example.com/', events: ['*'] }), 400, 'INVALID_REQUEST');

    const production = await create(service, { url: 'https://prod.example.com/', events: ['*'] }, PRODUCTION_KEY);
    expect(production.status, JSON.stringify(production.body)).to.equal(201);
  });
});
