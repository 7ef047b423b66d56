import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { percentageVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';

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

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core): sign in, create a
 * key, use it against the API, see it listed masked, revoke it, see the API refuse it.
 */
describe('dashboard in Chromium', function () {
  this.timeout(120_000);
  let service: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  before(async () => {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(
        `The dashboard browser test needs Chromium at ${CHROMIUM}, which is missing. Install it: apt-get update && apt-get install -y chromium`,
      );
    }
    service = await TestService.start({ adminPassword: PASSWORD });
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
});
