import { expect } from 'chai';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { AdminAuth } from '../../src/application/adminAuth.ts';
import { createApp } from '../../src/http/createApp.ts';
import { DashboardClient, hiddenCsrf, setCookie } from '../support/dashboardClient.ts';
import { SANDBOX_KEY, TestService } from '../support/harness.ts';

const PASSWORD = 'correct horse battery staple';
const HOUR = 60 * 60 * 1000;

describe('dashboard over HTTP', () => {
  let service: TestService;
  let client: DashboardClient;
  before(async () => {
    service = await TestService.start({ adminPassword: PASSWORD });
  });
  after(async () => {
    await service.stop();
  });
  beforeEach(() => {
    client = new DashboardClient(service.baseUrl);
  });

  describe('sign-in', () => {
    it('sends every page behind sign-in to the login page', async () => {
      for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/keys/key_x/revoke']) {
        const res = await client.get(path);
        expect(res.status, path).to.equal(303);
        expect(res.location, path).to.equal('/dashboard/login');
      }
      const before = service.embedded.keys.size;
      const post = await client.post('/dashboard/keys', {
        _csrf: 'x',
        name: 'sneaky',
        environment: 'sandbox',
        scopes: 'vouchers:read',
      });
      expect(post.status).to.equal(303);
      expect(post.location).to.equal('/dashboard/login');
      expect(service.embedded.keys.size).to.equal(before);
    });

    it('refuses a wrong password with the login page again and no session', async () => {
      const res = await client.login('not the password');
      expect(res.status).to.equal(401);
      expect(res.html).to.contain('Wrong password');
      expect(res.html).to.contain('action="/dashboard/login"');
      expect(setCookie(res, 'vs_session')).to.equal(undefined);
      expect((await client.get('/dashboard/keys')).status).to.equal(303);
    });

    it('signs in with the password and sets a strict, HttpOnly session cookie on /dashboard (not Secure over HTTP)', async () => {
      const res = await client.login(PASSWORD);
      expect(res.status).to.equal(303);
      expect(res.location).to.equal('/dashboard/keys');
      const cookie = setCookie(res, 'vs_session')!;
      expect(cookie)
        .to.match(/; HttpOnly/i)
        .and.match(/; SameSite=Strict/i)
        .and.match(/; Path=\/dashboard(;|$)/);
      expect(cookie).not.to.match(/; Secure/i);
      expect(cookie).not.to.match(/Max-Age|Expires/i);
      expect(cookie.split(';')[0]!.length).to.be.greaterThan('vs_session='.length + 40);
      expect((await client.get('/dashboard/keys')).status).to.equal(200);
    });

    it('gives the login form a short-lived, signed double-submit cookie with the same flags', async () => {
      const form = await client.get('/dashboard/login');
      const cookie = setCookie(form, 'vs_login_csrf')!;
      expect(cookie)
        .to.match(/; Max-Age=600/)
        .and.match(/; HttpOnly/i)
        .and.match(/; SameSite=Strict/i)
        .and.match(/; Path=\/dashboard/);
      expect(decodeURIComponent(cookie.split(';')[0]!)).to.match(/^vs_login_csrf=s:/);
    });

    it('refuses a login whose token does not match its cookie (403), even with the right password', async () => {
      const res = await client.login(PASSWORD, 'forged-token');
      expect(res.status).to.equal(403);
      expect(setCookie(res, 'vs_session')).to.equal(undefined);
      const other = new DashboardClient(service.baseUrl);
      const stolen = hiddenCsrf((await other.get('/dashboard/login')).html);
      const noCookie = await new DashboardClient(service.baseUrl).post('/dashboard/login', {
        _csrf: stolen,
        password: PASSWORD,
      });
      expect(noCookie.status).to.equal(403);
    });

    it('signs out: the cookie is cleared and the old session id no longer works', async () => {
      const csrf = await client.signIn(PASSWORD);
      const sessionId = client.jar.get('vs_session')!;
      const res = await client.post('/dashboard/logout', { _csrf: csrf });
      expect(res.status).to.equal(303);
      expect(res.location).to.equal('/dashboard/login?signed_out=1');
      expect(setCookie(res, 'vs_session')).to.match(/Expires=Thu, 01 Jan 1970/);
      const replay = new DashboardClient(service.baseUrl);
      replay.jar.set('vs_session', sessionId);
      expect((await replay.get('/dashboard/keys')).location).to.equal('/dashboard/login');
      expect((await client.get(res.location!)).html).to.contain('You have signed out.');
    });

    it('ends a session after 8 hours without a request, and each request restarts the 8 hours', async () => {
      await client.signIn(PASSWORD);
      service.clock.advance(8 * HOUR - 60_000);
      expect((await client.get('/dashboard/keys')).status).to.equal(200);
      service.clock.advance(8 * HOUR - 60_000);
      expect((await client.get('/dashboard/keys')).status).to.equal(200);
      service.clock.advance(8 * HOUR);
      const res = await client.get('/dashboard/keys');
      expect(res.status).to.equal(303);
      expect(res.location).to.equal('/dashboard/login');
    });
  });

  describe('forms need the session token', () => {
    it('refuses create, revoke and logout with a wrong or missing token (403) and changes nothing', async () => {
      await client.signIn(PASSWORD);
      const before = service.embedded.keys.size;
      const create = await client.post('/dashboard/keys', {
        _csrf: 'wrong',
        name: 'x',
        environment: 'sandbox',
        scopes: 'vouchers:read',
      });
      expect(create.status).to.equal(403);
      expect(create.html).to.contain('Form expired');
      expect(
        (await client.post('/dashboard/keys', { name: 'x', environment: 'sandbox', scopes: 'vouchers:read' })).status,
      ).to.equal(403);
      expect(service.embedded.keys.size).to.equal(before);

      const { record } = await service.embedded.keys.create('sandbox', 'victim', undefined, 'test');
      expect((await client.post(`/dashboard/keys/${record.id}/revoke`, { _csrf: 'wrong' })).status).to.equal(403);
      expect(service.embedded.keys.get(record.id)!.revokedAt).to.equal(undefined);
      expect((await client.post('/dashboard/logout', { _csrf: 'wrong' })).status).to.equal(403);
      expect((await client.get('/dashboard/keys')).status).to.equal(200);
    });

    it("does not accept another session's token", async () => {
      const otherToken = await new DashboardClient(service.baseUrl).signIn(PASSWORD);
      await client.signIn(PASSWORD);
      const res = await client.post('/dashboard/keys', {
        _csrf: otherToken,
        name: 'x',
        environment: 'sandbox',
        scopes: 'vouchers:read',
      });
      expect(res.status).to.equal(403);
    });
  });

  describe('API keys section', () => {
    let csrf: string;
    beforeEach(async () => {
      csrf = await client.signIn(PASSWORD);
    });

    it('creates a key with the chosen environment and scopes, shows it once, and lists only prefix…last4', async () => {
      const res = await client.post('/dashboard/keys', {
        _csrf: csrf,
        name: 'Checkout',
        environment: 'production',
        scopes: ['vouchers:read', 'vouchers:redeem'],
      });
      expect(res.status).to.equal(201);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      const key = /id="new-key"[^>]*>(sk_live_[A-Za-z0-9]{32})</.exec(res.html)?.[1];
      expect(key, 'the new key on the creation page').to.be.a('string');
      expect(res.html).to.contain('shown only once');
      const record = service.embedded.keys.list().find((r) => r.last4 === key!.slice(-4) && r.name === 'Checkout')!;
      expect(record).to.deep.include({
        environment: 'production',
        scopes: ['vouchers:read', 'vouchers:redeem'],
        createdBy: 'dashboard',
      });

      const list = await client.get('/dashboard/keys');
      expect(list.headers.get('cache-control')).to.equal('no-store');
      expect(list.html).not.to.contain(key!);
      expect(list.html).to.contain(`sk_live_…${key!.slice(-4)}`);
      expect((await service.get('/v1/vouchers', { key: key! })).status).to.equal(200);
    });

    it('refuses a key without scopes, with an unknown scope or without a name (400, nothing created)', async () => {
      const before = service.embedded.keys.size;
      const forms: Array<Record<string, string | string[]>> = [
        { name: 'a', environment: 'sandbox' },
        { name: 'a', environment: 'sandbox', scopes: ['vouchers:read', 'admin:everything'] },
        { name: '  ', environment: 'sandbox', scopes: 'vouchers:read' },
        { name: 'a', environment: 'staging', scopes: 'vouchers:read' },
      ];
      for (const form of forms) {
        const res = await client.post('/dashboard/keys', { _csrf: csrf, ...form });
        expect(res.status, JSON.stringify(form)).to.equal(400);
        expect(res.html).to.contain('alert-error');
      }
      expect(service.embedded.keys.size).to.equal(before);
    });

    it('escapes what it shows (a key named like markup)', async () => {
      await service.embedded.keys.create('sandbox', '<script>alert("x")</script>', undefined, 'test');
      const list = await client.get('/dashboard/keys');
      expect(list.html).not.to.contain('<script>alert');
      expect(list.html).to.contain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    });

    it('revokes after a confirmation page (no-store), recording revokedBy dashboard; the key then gets 401', async () => {
      const { key, record } = await service.embedded.keys.create('sandbox', 'Old key', undefined, 'test');
      const confirm = await client.get(`/dashboard/keys/${record.id}/revoke`);
      expect(confirm.status).to.equal(200);
      expect(confirm.headers.get('cache-control')).to.equal('no-store');
      expect(confirm.html).to.contain(`action="/dashboard/keys/${record.id}/revoke"`);
      expect(confirm.html).not.to.contain(key);
      expect(service.embedded.keys.get(record.id)!.revokedAt).to.equal(undefined);

      const res = await client.post(`/dashboard/keys/${record.id}/revoke`, { _csrf: hiddenCsrf(confirm.html) });
      expect(res.status).to.equal(303);
      expect(service.embedded.keys.get(record.id)).to.deep.include({ revokedBy: 'dashboard' });
      expect((await client.get(res.location!)).html).to.contain('is revoked');
      expect((await service.get('/v1/vouchers', { key })).status).to.equal(401);
    });

    it('cannot revoke a key from VOUCHER_API_KEYS or an unknown id (404)', async () => {
      const configured = service.embedded.keys.list().find((r) => r.id.startsWith('key_cfg_'))!;
      expect((await client.post(`/dashboard/keys/${configured.id}/revoke`, { _csrf: csrf })).status).to.equal(404);
      expect((await client.get('/dashboard/keys/key_nope/revoke')).status).to.equal(404);
      expect(configured.revokedAt).to.equal(undefined);
    });

    it('documents rotation on the page', async () => {
      const html = (await client.get('/dashboard/keys')).html;
      expect(html)
        .to.contain('Rotating a key')
        .and.contain('Create the new key')
        .and.contain('Switch over')
        .and.contain('Revoke the old key');
    });
  });

  describe('headers', () => {
    it('sends helmet headers with a self-only CSP on every dashboard response, pages and assets', async () => {
      await client.signIn(PASSWORD);
      for (const path of [
        '/dashboard/login',
        '/dashboard/keys',
        '/dashboard/assets/dashboard.css',
        '/dashboard/assets/copy.js',
        '/dashboard/nope',
      ]) {
        const res = await client.get(path);
        const csp = res.headers.get('content-security-policy') ?? '';
        expect(csp, path)
          .to.contain("default-src 'self'")
          .and.contain("script-src 'self'")
          .and.contain("style-src 'self'");
        expect(csp, path).to.contain("frame-ancestors 'none'").and.not.contain('unsafe-inline');
        expect(res.headers.get('x-content-type-options'), path).to.equal('nosniff');
        expect(res.headers.get('x-frame-options'), path).to.equal('DENY');
        expect(res.headers.get('referrer-policy'), path).to.equal('no-referrer');
        expect(res.headers.get('strict-transport-security'), path).to.be.a('string');
      }
      expect(
        (await new DashboardClient(service.baseUrl).get('/dashboard/login')).headers.get('cache-control'),
      ).to.equal('no-store');
    });

    it('leaves /v1 as it was: no dashboard headers, JSON 404 outside /dashboard', async () => {
      const res = await service.get('/v1/vouchers', { key: SANDBOX_KEY });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-security-policy')).to.equal(null);
      expect((await service.get('/nope')).body.error.code).to.equal('NOT_FOUND');
    });
  });
});

describe('dashboard login throttle', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start({ adminPassword: PASSWORD });
  });
  after(async () => {
    await service.stop();
  });

  it('answers 429 after 5 failed sign-ins from one address, even to the right password', async () => {
    const client = new DashboardClient(service.baseUrl);
    for (let attempt = 1; attempt <= 5; attempt += 1)
      expect((await client.login('wrong')).status, `attempt ${attempt}`).to.equal(401);
    const blocked = await client.login(PASSWORD);
    expect(blocked.status).to.equal(429);
    expect(blocked.html).to.contain('Too many sign-in attempts');
    expect(setCookie(blocked, 'vs_session')).to.equal(undefined);
  });

  it('counts only posts that carry the login form token: token-less and forged posts never pause sign-in', async () => {
    const fresh = await TestService.start({ adminPassword: PASSWORD });
    try {
      for (let attempt = 1; attempt <= 8; attempt += 1) {
        // no cookie and no token, as a script posting the form blindly would
        const blind = await new DashboardClient(fresh.baseUrl).post('/dashboard/login', { password: 'guess' });
        expect(blind.status, `blind attempt ${attempt}`).to.equal(403);
        // the form's cookie but a made-up token
        expect((await new DashboardClient(fresh.baseUrl).login('guess', 'forged')).status).to.equal(403);
      }
      expect((await new DashboardClient(fresh.baseUrl).login(PASSWORD)).status).to.equal(303);
      // wrong passwords on a real form still count: 5, then paused
      const client = new DashboardClient(fresh.baseUrl);
      for (let attempt = 1; attempt <= 5; attempt += 1) expect((await client.login('wrong')).status).to.equal(401);
      expect((await client.login(PASSWORD)).status).to.equal(429);
    } finally {
      await fresh.stop();
    }
  });

  it('with TRUST_PROXY, counts per forwarded client: one client paused, another behind the same proxy not', async () => {
    const proxied = await TestService.start({ adminPassword: PASSWORD, trustProxy: ['loopback'] });
    try {
      const attacker = new DashboardClient(proxied.baseUrl, { 'X-Forwarded-For': '203.0.113.7' });
      for (let attempt = 1; attempt <= 5; attempt += 1) expect((await attacker.login('wrong')).status).to.equal(401);
      expect((await attacker.login(PASSWORD)).status).to.equal(429);
      const operator = new DashboardClient(proxied.baseUrl, { 'X-Forwarded-For': '198.51.100.9' });
      expect((await operator.login('typo')).status).to.equal(401);
      expect((await operator.login(PASSWORD)).status).to.equal(303);
    } finally {
      await proxied.stop();
    }
  });

  it('without TRUST_PROXY, ignores X-Forwarded-For: a client cannot dodge the pause by changing it', async () => {
    const direct = await TestService.start({ adminPassword: PASSWORD });
    try {
      for (let attempt = 1; attempt <= 5; attempt += 1) {
        const client = new DashboardClient(direct.baseUrl, { 'X-Forwarded-For': `203.0.113.${attempt}` });
        expect((await client.login('wrong')).status).to.equal(401);
      }
      const dodger = new DashboardClient(direct.baseUrl, { 'X-Forwarded-For': '198.51.100.9' });
      expect((await dodger.login(PASSWORD)).status).to.equal(429);
    } finally {
      await direct.stop();
    }
  });

  it('does not count successful sign-ins', async () => {
    const fresh = await TestService.start({ adminPassword: PASSWORD });
    try {
      for (let i = 0; i < 7; i += 1)
        expect((await new DashboardClient(fresh.baseUrl).login(PASSWORD)).status).to.equal(303);
    } finally {
      await fresh.stop();
    }
  });
});

describe('dashboard over HTTPS', () => {
  it('marks the cookies Secure when the request came over TLS', async () => {
    const service = await TestService.start();
    // The app behind a server whose sockets say they are TLS: what Node sets for an https.Server.
    const app = createApp({
      environments: service.embedded.environments,
      keys: service.embedded.keys,
      logger: pino({ level: 'silent' }),
      admin: await AdminAuth.fromPassword(PASSWORD),
      clock: service.clock,
    });
    const server: Server = http.createServer((req, res) => {
      Object.assign(req.socket, { encrypted: true });
      app(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = new DashboardClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      expect(setCookie(await client.get('/dashboard/login'), 'vs_login_csrf')).to.match(/; Secure/i);
      expect(
        setCookie(
          await client.post('/dashboard/login', {
            _csrf: hiddenCsrf((await client.get('/dashboard/login')).html),
            password: PASSWORD,
          }),
          'vs_session',
        ),
      ).to.match(/; Secure/i);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await service.stop();
    }
  });
});

describe('dashboard without an operator password', () => {
  it('is not served at all', async () => {
    const service = await TestService.start();
    try {
      const res = await service.get('/dashboard/login', { key: null });
      expect(res.status).to.equal(404);
    } finally {
      await service.stop();
    }
  });
});
