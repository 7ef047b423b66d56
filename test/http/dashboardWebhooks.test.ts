/**
 * The dashboard's Webhooks section over HTTP: sign-in and the session token guard it, and bad
 * input (a malformed URL, http in production, no event, a refused address, a bad recovery time,
 * too many endpoints) answers 400 with the form again and the message naming the field; never a
 * 500, and nothing is created or changed.
 */
import { expect } from 'chai';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { MAX_ENDPOINTS } from '../../src/application/webhooks/endpoints.ts';
import { DashboardClient, hiddenCsrf, type Page } from '../support/dashboardClient.ts';
import { PRODUCTION_KEY, SANDBOX_KEY, TestService } from '../support/harness.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { until, WebhookReceiver } from '../support/webhookReceiver.ts';

const PASSWORD = 'correct horse battery staple';

/** Real time (the retry timers run on it), as a FakeClock. */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

/** The text of the form's error alert, tags removed. */
const alertText = (page: Page): string => {
  const match = /<div class="alert alert-error" role="alert" id="form-error">([\s\S]*?)<\/div>/.exec(page.html);
  return (match?.[1] ?? '')
    .replace(/<[^>]+>/g, '')
    .replace(/\s+/g, ' ')
    .trim();
};

describe('dashboard Webhooks section over HTTP', function () {
  this.timeout(30_000);
  let service: TestService;
  let receiver: WebhookReceiver;
  let client: DashboardClient;
  let csrf: string;

  const endpoints = async (key = SANDBOX_KEY) =>
    (await service.get('/v1/webhooks?limit=100', { key })).body.data as Array<{
      id: string;
      url: string;
      status: string;
    }>;
  const register = async (url: string, key = SANDBOX_KEY) => {
    const res = await service.post('/v1/webhooks', { url, events: ['*'] }, { key });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string; secret: string };
  };
  const create = (env: string, form: Record<string, string | string[]>) =>
    client.post(`/dashboard/webhooks/${env}`, { _csrf: csrf, ...form });

  before(async () => {
    receiver = await WebhookReceiver.start();
    service = await TestService.start({
      adminPassword: PASSWORD,
      clock: new RealClock(),
      webhooks: { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: [100, 200], timeoutMs: 1_000 },
    });
  });
  after(async () => {
    await service.stop();
    await receiver.stop();
  });
  beforeEach(async () => {
    client = new DashboardClient(service.baseUrl);
    csrf = await client.signIn(PASSWORD);
    for (const key of [SANDBOX_KEY, PRODUCTION_KEY])
      for (const e of await endpoints(key)) await service.delete(`/v1/webhooks/${e.id}`, { key });
  });

  it('sends every Webhooks page and form to the login page without a session, and refuses a form without the token', async () => {
    const { id } = await register(receiver.url('/guarded'));
    const anonymous = new DashboardClient(service.baseUrl);
    for (const path of ['/dashboard/webhooks', '/dashboard/webhooks/sandbox', `/dashboard/webhooks/sandbox/${id}`]) {
      const res = await anonymous.get(path);
      expect(res.status, path).to.equal(303);
      expect(res.location, path).to.equal('/dashboard/login');
    }
    const post = await anonymous.post('/dashboard/webhooks/sandbox', { url: receiver.url('/x'), events: '*' });
    expect(post.location).to.equal('/dashboard/login');
    for (const [path, form] of [
      ['/dashboard/webhooks/sandbox', { url: receiver.url('/x'), events: '*' }],
      [`/dashboard/webhooks/sandbox/${id}/delete`, {}],
      [`/dashboard/webhooks/sandbox/${id}/status`, { status: 'disabled' }],
      [`/dashboard/webhooks/sandbox/${id}/rotate`, {}],
    ] as const) {
      const res = await client.post(path, { _csrf: 'forged', ...form });
      expect(res.status, path).to.equal(403);
    }
    expect(await endpoints()).to.have.length(1);
    expect((await endpoints())[0]!.status).to.equal('enabled');
  });

  it('refuses bad input with the form again (400), naming the field, keeping what was typed, creating nothing', async () => {
    const cases: Array<[string, Record<string, string | string[]>, RegExp]> = [
      ['sandbox', { url: 'not a url', events: '*' }, /^URL must be an absolute URL/],
      ['sandbox', { url: '', events: '*' }, /^URL is required/],
      ['sandbox', { url: 'ftp://example.com/hook', events: '*' }, /^URL must use https/],
      ['production', { url: 'http://example.com/hook', events: '*' }, /^URL must use https in production/],
      ['sandbox', { url: 'https://10.1.2.3/hook', events: '*' }, /^URL points at a refused address/],
      ['sandbox', { url: 'https://user:pw@example.com/hook', events: '*' }, /^URL must not carry credentials/],
      ['sandbox', { url: 'https://example.com/hook' }, /^Events must include at least one event type/],
      [
        'sandbox',
        { url: 'https://example.com/hook', events: ['voucher.applied', 'voucher.nope'] },
        /^Events is not an event type/,
      ],
      ['sandbox', { url: 'https://example.com/hook', events: 'x'.repeat(200) }, /^Events must be chosen from the list/],
      [
        'sandbox',
        { url: 'https://example.com/hook', events: '*', description: 'd'.repeat(501) },
        /^Description must be at most 500/,
      ],
    ];
    for (const [env, form, message] of cases) {
      const res = await create(env, form);
      const what = `${env} ${JSON.stringify(form).slice(0, 120)}`;
      expect(res.status, what).to.equal(400);
      expect(res.headers.get('cache-control'), what).to.equal('no-store');
      expect(alertText(res), what).to.match(message);
      expect(res.html, what).to.contain('aria-invalid="true"');
      expect(res.html, what).to.contain(`action="/dashboard/webhooks/${env}"`);
      if (form.url) expect(res.html, what).to.contain(`value="${form.url}"`);
    }
    const both = await create('production', { url: '' });
    expect(alertText(both)).to.contain('URL is required').and.contain('Events must include at least one event type');
    const all = await create('production', { url: 'http://example.com/hook', description: 'd'.repeat(501) });
    expect(alertText(all))
      .to.contain('URL must use https in production')
      .and.contain('Description must be at most 500')
      .and.contain('Events must include at least one event type');
    expect(await endpoints(SANDBOX_KEY)).to.deep.equal([]);
    expect(await endpoints(PRODUCTION_KEY)).to.deep.equal([]);
  });

  it(`refuses the ${MAX_ENDPOINTS + 1}th endpoint of an environment with the reason on the form`, async () => {
    for (let i = 0; i < MAX_ENDPOINTS; i += 1) await register(receiver.url(`/many/${i}`));
    const res = await create('sandbox', { url: receiver.url('/one-too-many'), events: '*' });
    expect(res.status).to.equal(400);
    expect(alertText(res)).to.match(/already has 16 webhook endpoints.*delete one first/);
    expect(await endpoints()).to.have.length(MAX_ENDPOINTS);
    // the other environment has its own count
    expect((await create('production', { url: 'https://example.com/hook', events: '*' })).status).to.equal(201);
  });

  it('creates an endpoint in the chosen environment, shows its secret once, lists it without the secret', async () => {
    const res = await create('production', {
      url: 'https://example.com/hooks/orders',
      events: ['voucher.applied', 'voucher.application_rolled_back'],
      description: '<b>Orders</b>',
    });
    expect(res.status).to.equal(201);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const secret = /id="new-secret"[^>]*>(whsec_[A-Za-z0-9+/=]+)</.exec(res.html)?.[1];
    expect(secret, 'the secret on the creation page').to.be.a('string');
    expect(res.html).to.contain('shown only once');
    const [created] = await endpoints(PRODUCTION_KEY);
    expect(created).to.deep.include({ url: 'https://example.com/hooks/orders', status: 'enabled' });
    expect(await endpoints(SANDBOX_KEY)).to.deep.equal([]);

    const list = await client.get('/dashboard/webhooks/production');
    expect(list.status).to.equal(200);
    expect(list.html).to.contain('https://example.com/hooks/orders').and.contain('Enabled');
    expect(list.html).not.to.contain(secret!);
    expect(list.html).not.to.contain('<b>Orders</b>');
    expect(list.html).to.contain('&lt;b&gt;Orders&lt;/b&gt;');
    const page = await client.get(`/dashboard/webhooks/production/${created!.id}`);
    expect(page.status).to.equal(200);
    expect(page.html).not.to.contain(secret!);
    expect((await client.get('/dashboard/webhooks/sandbox')).html).not.to.contain('https://example.com/hooks/orders');
  });

  it('answers 404 for an unknown environment, endpoint or delivery, and for an endpoint of the other environment', async () => {
    const { id } = await register('https://example.com/elsewhere', PRODUCTION_KEY);
    for (const path of [
      '/dashboard/webhooks/staging',
      '/dashboard/webhooks/sandbox/we_NoSuchEndpoint0001',
      '/dashboard/webhooks/sandbox/not-an-id',
      `/dashboard/webhooks/sandbox/${id}`,
      `/dashboard/webhooks/sandbox/${id}/delete`,
    ]) {
      const res = await client.get(path);
      expect(res.status, path).to.equal(404);
      expect(res.html, path).to.contain('Not found');
    }
    expect((await client.post(`/dashboard/webhooks/sandbox/${id}/delete`, { _csrf: csrf })).status).to.equal(404);
    expect(
      (await client.post('/dashboard/webhooks/staging', { _csrf: csrf, url: 'https://e.com', events: '*' })).status,
    ).to.equal(404);
    const resend = (delivery: string) =>
      client.post(`/dashboard/webhooks/production/${id}/deliveries/${delivery}/resend`, { _csrf: csrf });
    expect((await resend('msg_NoSuchDelivery0001')).status).to.equal(404);
    expect((await resend('nope')).status).to.equal(404);
    expect(await endpoints(PRODUCTION_KEY)).to.have.length(1);
  });

  it('refuses a bad recovery time (400, naming Since) and a bad status (400), changing nothing', async () => {
    const { id } = await register(receiver.url('/recover'));
    const path = `/dashboard/webhooks/sandbox/${id}`;
    for (const since of [
      '',
      'yesterday',
      '2026-02-31T10:00',
      '2026-01-15 10:00',
      `2026-01-15T10:00${'9'.repeat(500)}`,
    ]) {
      const res = await client.post(`${path}/recover`, { _csrf: csrf, since });
      expect(res.status, since).to.equal(400);
      expect(alertText(res), since).to.match(/^Since (is required|must be a date and time in UTC)/);
      expect(res.html, since).to.contain('id="since"');
    }
    const status = await client.post(`${path}/status`, { _csrf: csrf, status: 'paused' });
    expect(status.status).to.equal(400);
    expect(status.html).to.contain('Status must be enabled or disabled');
    expect((await endpoints())[0]!.status).to.equal('enabled');
  });

  it('shows a delivery with its attempts and response code; resend, recover, disable and delete redirect with a notice', async () => {
    receiver.answer('/flow', (_r, attempt) => (attempt === 1 ? 500 : 200));
    const { id } = await register(receiver.url('/flow'));
    const path = `/dashboard/webhooks/sandbox/${id}`;
    const test = await client.post(`${path}/test`, { _csrf: csrf });
    expect(test.status).to.equal(303);
    expect(test.location).to.equal(`${path}?done=test#deliveries`);
    await until(() => receiver.accepted('/flow').length === 1, 'the retried test event');
    await until(async () => (await client.get(path)).html.includes('>200</code'), 'the page showing the 200');
    const page = await client.get(path);
    expect(page.html).to.contain('webhook.test').and.contain('Succeeded').and.contain('2 attempts');
    expect(page.html)
      .to.match(/response-code bad"\s*>500</)
      .and.match(/response-code ok"\s*>200</);

    const deliveryId = /data-delivery-id="(msg_[A-Za-z0-9]+)"/.exec(page.html)![1]!;
    const resent = await client.post(`${path}/deliveries/${deliveryId}/resend`, { _csrf: hiddenCsrf(page.html) });
    expect(resent.location).to.equal(`${path}?done=resent#deliveries`);
    await until(() => receiver.accepted('/flow').length === 2, 'the resent delivery');
    expect((await client.get(resent.location!)).html).to.contain('A new attempt of the delivery is on its way.');

    const recovered = await client.post(`${path}/recover`, { _csrf: csrf, since: '2000-01-01T00:00' });
    expect(recovered.location).to.equal(`${path}?done=recovered&count=0#deliveries`);
    expect((await client.get(recovered.location!)).html).to.contain('0 failed deliveries are queued again.');

    const disabled = await client.post(`${path}/status`, { _csrf: csrf, status: 'disabled' });
    expect(disabled.location).to.equal(`${path}?done=disabled`);
    expect((await endpoints())[0]!.status).to.equal('disabled');
    expect((await client.get(disabled.location!)).html).to.contain('The endpoint is disabled');

    const confirm = await client.get(`${path}/delete`);
    expect(confirm.html).to.contain('Delete this endpoint?');
    expect(await endpoints()).to.have.length(1);
    const deleted = await client.post(`${path}/delete`, { _csrf: csrf });
    expect(deleted.location).to.equal('/dashboard/webhooks/sandbox?done=deleted');
    expect(await endpoints()).to.deep.equal([]);
    expect((await client.get(deleted.location!)).html).to.contain('The endpoint is deleted');
  });

  it('recovers the failed deliveries since the given time: the count on the page, then the receiver gets them', async () => {
    let down = true;
    receiver.answer('/down', () => (down ? 500 : 200));
    const { id } = await register(receiver.url('/down'));
    const path = `/dashboard/webhooks/sandbox/${id}`;
    await client.post(`${path}/test`, { _csrf: csrf });
    await client.post(`${path}/test`, { _csrf: csrf });
    await until(
      async () => (await client.get(`${path}?status=failed`)).html.match(/data-delivery-id=/g)?.length === 2,
      'two failed deliveries (3 attempts each)',
    );
    expect(receiver.at('/down')).to.have.length(6);
    const failed = await client.get(`${path}?status=failed`);
    expect(failed.html).to.contain('3 attempts').and.contain('Failed');
    down = false;
    const since = new Date(Date.now() - 60_000).toISOString().slice(0, 16);
    const recovered = await client.post(`${path}/recover`, { _csrf: csrf, since });
    expect(recovered.status).to.equal(303);
    expect(recovered.location).to.equal(`${path}?done=recovered&count=2#deliveries`);
    expect((await client.get(recovered.location!)).html).to.contain('2 failed deliveries are queued again.');
    await until(() => receiver.accepted('/down').length === 2, 'both recovered deliveries');
    // a time after them recovers none
    await until(
      async () => !(await client.get(`${path}?status=pending`)).html.includes('data-delivery-id='),
      'none pending',
    );
    const later = new Date(Date.now() + 60_000).toISOString().slice(0, 16);
    expect((await client.post(`${path}/recover`, { _csrf: csrf, since: later })).location).to.contain('count=0');
  });
});
