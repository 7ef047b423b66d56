import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { applyBody } from '../fixtures/orders.ts';
import { percentageVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { TestService } from '../support/harness.ts';
import { until, verify, WebhookReceiver } from '../support/webhookReceiver.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const PASSWORD = 'a-long-operator-password-for-the-browser-test';
const SCREENSHOT = path.resolve('test-artifacts', 'dashboard-api-keys.png');
const WEBHOOKS_SCREENSHOT = path.resolve('test-artifacts', 'dashboard-webhooks.png');
const ENDPOINT_SCREENSHOT = path.resolve('test-artifacts', 'dashboard-webhook-endpoint.png');

/** Real time: the dispatcher's retry timers and the receiver's signature check run on it. */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core): sign in, create a
 * key, use it against the API, see it listed masked, revoke it, see the API refuse it; add a
 * webhook endpoint for a receiver on 127.0.0.1 (allowed by the loopback allow-list), see its
 * deliveries, resend, rotate, disable and delete it.
 */
describe('dashboard in Chromium', function () {
  this.timeout(120_000);
  let service: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let receiver: WebhookReceiver;
  const problems: string[] = [];

  before(async () => {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(
        `The dashboard browser test needs Chromium at ${CHROMIUM}, which is missing. Install it: apt-get update && apt-get install -y chromium`,
      );
    }
    receiver = await WebhookReceiver.start();
    // A first retry a minute away: a failed attempt stays pending with its next retry on the page.
    service = await TestService.start({
      adminPassword: PASSWORD,
      clock: new RealClock(),
      webhooks: { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: [60_000, 60_000], timeoutMs: 2_000 },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    context = await browser.newContext({ baseURL: service.baseUrl, viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.baseUrl });
    page = await context.newPage();
    // A CSP violation (an inline script or style) or a failed asset shows up here.
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    page.on('pageerror', (error) => {
      problems.push(error.message);
    });
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    await receiver?.stop();
  });

  const api = (key: string, method = 'GET', body?: unknown) =>
    fetch(`${service.baseUrl}/v1/vouchers`, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });

  it('refuses a wrong password: stays on the login page with an error', async () => {
    await page.goto('/dashboard');
    expect(new URL(page.url()).pathname).to.equal('/dashboard/login');
    await page.fill('#password', 'not-the-password');
    await page.click('button[type=submit]');
    await page.locator('#login-error').waitFor();
    expect(new URL(page.url()).pathname).to.equal('/dashboard/login');
    expect(await page.textContent('#login-error')).to.contain('Wrong password');
    expect((await context.cookies()).map((c) => c.name)).not.to.include('vs_session');
    // The refused sign-in is a 401 document, which Chromium reports on the console; nothing else may be there.
    expect(problems.filter((p) => !p.includes('401'))).to.deep.equal([]);
    problems.length = 0;
  });

  it('signs in, creates a sandbox key with fewer scopes, uses it, lists it masked, revokes it', async () => {
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL('**/dashboard/keys'), page.click('button[type=submit]')]);
    const session = (await context.cookies()).find((c) => c.name === 'vs_session');
    expect(session).to.deep.include({ httpOnly: true, sameSite: 'Strict', path: '/dashboard' });

    // Create: a name, Sandbox, and only two of the scopes (all are checked at first).
    expect(await page.locator('input[name=scopes]:not(:checked)').count()).to.equal(0);
    await page.fill('#name', 'Browser test key');
    await page.check('input[name=environment][value=sandbox]');
    for (const box of await page.locator('input[name=scopes]').all()) {
      const scope = await box.getAttribute('value');
      if (scope !== 'vouchers:read' && scope !== 'vouchers:redeem') await box.uncheck();
    }
    await page.click('form[action="/dashboard/keys"] button[type=submit]');
    await page.locator('h1', { hasText: 'Your new API key' }).waitFor();
    expect(await page.textContent('.alert-warning')).to.contain('shown only once');

    // Read the key from the page; the copy button (a script file, allowed by the CSP) copies it.
    const key = (await page.textContent('#new-key'))!.trim();
    expect(key).to.match(/^sk_test_[A-Za-z0-9]{32}$/);
    await page.click('button[data-copy]');
    await page.locator('#copy-status').filter({ hasText: 'clipboard' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).to.equal(key);

    // The key works against the API, within its scopes only.
    expect((await api(key)).status).to.equal(200);
    expect((await api(key, 'POST', percentageVoucher('NOPE10'))).status).to.equal(403);

    // The list shows prefix…last4 and never the full key.
    await page.click('a.button[href="/dashboard/keys"]');
    await page.locator('h1', { hasText: 'API keys' }).waitFor();
    const listHtml = await page.content();
    expect(listHtml).not.to.contain(key);
    const row = page.locator('tr', { hasText: 'Browser test key' });
    expect(await row.locator('.masked-key').textContent()).to.equal(`sk_test_…${key.slice(-4)}`);
    expect(await row.locator('.scopes li').allTextContents()).to.deep.equal(['vouchers:read', 'vouchers:redeem']);
    expect(await row.textContent())
      .to.contain('Sandbox')
      .and.contain('Active');

    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // Revoke, through the confirmation page.
    await Promise.all([page.waitForURL('**/revoke'), row.getByRole('link', { name: 'Revoke' }).click()]);
    expect(await page.textContent('h1')).to.contain('Browser test key');
    expect(await page.content()).not.to.contain(key);
    expect((await api(key)).status, 'still live before confirming').to.equal(200);
    await Promise.all([page.waitForURL('**/dashboard/keys?revoked=*'), page.click('button.button-danger')]);
    expect(await page.textContent('.alert-info')).to.contain('is revoked');
    expect(await page.locator('tr', { hasText: 'Browser test key' }).textContent()).to.contain('Revoked');

    expect((await api(key)).status).to.equal(401);
    const record = service.embedded.keys.list().find((r) => r.name === 'Browser test key')!;
    expect(record).to.deep.include({ createdBy: 'dashboard', revokedBy: 'dashboard', environment: 'sandbox' });
    expect(problems, 'browser console errors').to.deep.equal([]);
  });

  /** Reloads the page until `check` holds (bounded: 40 reloads). */
  const reloadUntil = async (check: () => Promise<boolean>, what: string): Promise<void> => {
    for (let i = 0; i < 40; i += 1) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 100));
      await page.reload();
    }
    throw new Error(`the page never showed ${what}`);
  };

  it('adds a webhook endpoint, shows its secret once, lists deliveries with response codes, resends, rotates, disables, deletes', async () => {
    // The first attempt of the voucher.created event fails; everything else is accepted.
    receiver.answer('/browser', (r, attempt) => (r.json?.type === 'voucher.created' && attempt === 1 ? 503 : 200));
    await Promise.all([
      page.waitForURL('**/dashboard/webhooks/sandbox'),
      page.click('a.nav-link[href="/dashboard/webhooks"]'),
    ]);
    expect(await page.textContent('h1')).to.equal('Webhooks');
    expect(await page.textContent('.tab.is-current')).to.equal('Sandbox');

    // Add: the URL and two event types.
    await page.fill('#url', receiver.url('/browser'));
    await page.fill('#description', 'Browser test receiver');
    await page.check('input[name=events][value="voucher.created"]');
    await page.check('input[name=events][value="voucher.applied"]');
    await page.click('form[action="/dashboard/webhooks/sandbox"] button[type=submit]');
    await page.locator('h1', { hasText: 'signing secret' }).waitFor();
    expect(await page.textContent('.alert-warning')).to.contain('shown only once');
    const secret = (await page.textContent('#new-secret'))!.trim();
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
    await page.click('button[data-copy]');
    await page.locator('#copy-status').filter({ hasText: 'secret is on your clipboard' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).to.equal(secret);

    // The endpoint's page, and the list: never the secret again.
    await Promise.all([
      page.waitForURL('**/dashboard/webhooks/sandbox/we_*'),
      page.getByRole('link', { name: /I have copied it/ }).click(),
    ]);
    const endpointUrl = page.url();
    const endpointId = endpointUrl.split('/').pop()!;
    expect(await page.content()).not.to.contain(secret);
    expect(await page.textContent('#endpoint-status')).to.contain('Enabled');

    // A voucher event: the first attempt gets 503 and waits for its retry.
    await service.createVoucher(percentageVoucher('HOOKED10'));
    await until(() => receiver.at('/browser').length === 1, 'the first attempt');
    expect(() => verify(secret, receiver.at('/browser')[0]!)).not.to.throw();
    const row = page.locator('tr', { hasText: 'voucher.created' });
    await reloadUntil(async () => (await row.count()) === 1 && (await row.textContent())!.includes('503'), 'the 503');
    expect(await row.textContent())
      .to.contain('Pending')
      .and.contain('1 attempt');
    expect(await row.locator('td').nth(4).locator('time').count(), 'next retry shown').to.equal(1);

    // Resend: a new attempt now, answered 200.
    await Promise.all([page.waitForURL('**done=resent*'), row.getByRole('button', { name: 'Resend' }).click()]);
    expect(await page.textContent('.alert-info')).to.contain('new attempt');
    await until(() => receiver.accepted('/browser').length === 1, 'the resent delivery');
    await reloadUntil(async () => (await row.textContent())!.includes('Succeeded'), 'the success');
    await row.locator('summary').click();
    expect(await row.locator('.response-code').allTextContents()).to.deep.equal(['200', '503', '200']);
    expect(await row.locator('td').nth(4).textContent()).to.contain('–');

    fs.mkdirSync(path.dirname(ENDPOINT_SCREENSHOT), { recursive: true });
    await page.screenshot({ path: ENDPOINT_SCREENSHOT, fullPage: true });

    // Rotate: a new secret, shown once; the next delivery verifies with it.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.locator('h1', { hasText: 'Your new signing secret' }).waitFor();
    const rotated = (await page.textContent('#new-secret'))!.trim();
    expect(rotated)
      .to.match(/^whsec_/)
      .and.not.equal(secret);
    expect(await page.textContent('#previous-secret')).to.contain('keeps signing');
    const applied = await service.post('/v1/vouchers/apply', applyBody('HOOKED10', 'o-browser-1'));
    expect(applied.status).to.equal(201);
    await until(() => receiver.accepted('/browser').some((r) => r.json.type === 'voucher.applied'), 'voucher.applied');
    const appliedHook = receiver.accepted('/browser').find((r) => r.json.type === 'voucher.applied')!;
    expect(() => verify(rotated, appliedHook)).not.to.throw();

    // The list: status Enabled; then disable from the endpoint page.
    await page.goto('/dashboard/webhooks/sandbox');
    const listRow = page.locator(`tr[data-endpoint-id="${endpointId}"]`);
    expect(await listRow.textContent())
      .to.contain('Enabled')
      .and.contain('Browser test receiver');
    fs.mkdirSync(path.dirname(WEBHOOKS_SCREENSHOT), { recursive: true });
    await page.screenshot({ path: WEBHOOKS_SCREENSHOT, fullPage: true });
    await Promise.all([page.waitForURL(endpointUrl), listRow.getByRole('link', { name: 'Deliveries' }).click()]);
    await Promise.all([page.waitForURL('**done=disabled'), page.getByRole('button', { name: 'Disable' }).click()]);
    expect(await page.textContent('#endpoint-status')).to.contain('Disabled');
    expect((await service.get(`/v1/webhooks/${endpointId}`)).body.status).to.equal('disabled');

    // Delete, through the confirmation page.
    await Promise.all([page.waitForURL('**/delete'), page.getByRole('link', { name: 'Delete endpoint' }).click()]);
    expect(await page.textContent('h1')).to.contain('Delete this endpoint?');
    expect((await service.get(`/v1/webhooks/${endpointId}`)).status, 'still there before confirming').to.equal(200);
    await Promise.all([
      page.waitForURL('**/dashboard/webhooks/sandbox?done=deleted'),
      page.click('button.button-danger'),
    ]);
    expect(await page.textContent('.alert-info')).to.contain('is deleted');
    expect(await page.locator(`tr[data-endpoint-id="${endpointId}"]`).count()).to.equal(0);
    expect((await service.get(`/v1/webhooks/${endpointId}`)).status).to.equal(404);
    expect(problems, 'browser console errors').to.deep.equal([]);
  });
});
