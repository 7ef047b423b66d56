/**
 * `download_url` is built from the configured public base URL (PUBLIC_BASE_URL), or by default
 * from the address the server listens on: never from the request's `Host` or `X-Forwarded-*`
 * headers, which the client writes.
 */
import http from 'node:http';
import { expect } from 'chai';
import { SANDBOX_KEY, TestService } from '../support/harness.ts';
import { waitForExport } from '../support/analyticsFixture.ts';

/** GET with headers fetch would not send as given (`Host`), over a plain http.request. */
const getWithHeaders = (base: string, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = http.request(`${base}${path}`, { headers: { Authorization: `Bearer ${SANDBOX_KEY}`, ...headers } });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });

const FORGED = {
  Host: 'attacker.example',
  'X-Forwarded-Host': 'attacker.example',
  'X-Forwarded-Proto': 'https',
};

/** Makes one completed export and returns its id. */
const completedExport = async (service: TestService): Promise<string> => {
  const voucher = await service.createVoucher({ code: 'LINKS', type: 'fixed', value: 100 });
  const created = await service.post('/v1/analytics/export', { voucher_ids: [voucher.id], metrics: ['uses'] });
  expect(created.status, JSON.stringify(created.body)).to.equal(202);
  const done = await waitForExport(() => service.get(`/v1/analytics/export/${created.body.export_id}`));
  expect(done.status).to.equal('completed');
  return created.body.export_id as string;
};

describe('download_url and the public base URL', function () {
  this.timeout(60_000);
  let service: TestService | undefined;
  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  it('by default: the listen address, whatever Host the request names', async () => {
    service = await TestService.start();
    const id = await completedExport(service);
    const forged = await getWithHeaders(service.baseUrl, `/v1/analytics/export/${id}`, FORGED);
    expect(forged.status).to.equal(200);
    expect(forged.body.download_url).to.equal(`${service.baseUrl}/v1/analytics/export/${id}/download`);
    expect(JSON.stringify(forged.body)).not.to.contain('attacker');
  });

  it('with PUBLIC_BASE_URL: that URL, even with trust proxy on and forwarded headers sent', async () => {
    service = await TestService.start({
      publicBaseUrl: 'https://vouchers.example.com/promo',
      trustProxy: ['loopback'],
    });
    const id = await completedExport(service);
    const forged = await getWithHeaders(service.baseUrl, `/v1/analytics/export/${id}`, FORGED);
    expect(forged.body.download_url).to.equal(`https://vouchers.example.com/promo/v1/analytics/export/${id}/download`);
  });
});
