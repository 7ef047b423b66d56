/**
 * An export job whose analytics cannot reach its request in time fails with reason
 * `analytics_behind`; it never completes with the rows of lagging analytics. The projector
 * boundary (`ctx.analytics.waitFor`) is stubbed: it answers false as after its timeout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { ANALYTICS_WAIT_MS } from '../../src/application/exports/jobs.ts';
import { settle, waitForExport } from '../support/analyticsFixture.ts';
import { TestService } from '../support/harness.ts';

describe('HTTP exports while the analytics lag behind', function () {
  this.timeout(60_000);
  let service: TestService;
  let voucherId: string;

  before(async () => {
    service = await TestService.start();
    voucherId = (await service.createVoucher({ code: 'LAGGED', type: 'fixed', value: 100 })).id;
    const applied = await service.post('/v1/vouchers/apply', {
      code: 'LAGGED',
      order_id: 'lag-1',
      order: { value: 1_000 },
    });
    expect(applied.status).to.equal(201);
    await settle(service);
  });
  after(async () => {
    sinon.restore();
    await service.stop();
  });

  it('fails with EXPORT_FAILED {reason: "analytics_behind"} after a bounded wait, writes no file', async () => {
    const waitFor = sinon.stub(service.sandbox.analytics, 'waitFor').resolves(false);
    const created = await service.post('/v1/analytics/export', { voucher_ids: [voucherId], metrics: ['uses'] });
    expect(created.status, JSON.stringify(created.body)).to.equal(202);
    const done = await waitForExport(() => service.get(`/v1/analytics/export/${created.body.export_id}`));
    waitFor.restore();

    expect(done.status).to.equal('failed');
    expect(done).to.not.have.property('download_url');
    expect(done.error.code).to.equal('EXPORT_FAILED');
    expect(done.error.details).to.deep.equal({ reason: 'analytics_behind' });
    expect(done.error.message).to.match(/analytics/);
    // the wait is bounded, for the request's own position
    const [position, timeoutMs] = waitFor.lastCall.args;
    expect(timeoutMs).to.equal(ANALYTICS_WAIT_MS);
    expect(position).to.be.a('number').and.greaterThan(0);

    const download = await service.get(`/v1/analytics/export/${created.body.export_id}/download`);
    expect(download.status).to.equal(409);
    expect(download.body.error.code).to.equal('EXPORT_NOT_READY');
    const dir = path.join(service.dataDir, 'sandbox', 'exports');
    expect(fs.readdirSync(dir).filter((f) => f.startsWith(created.body.export_id))).to.deep.equal([]);
  });

  it('completes once the analytics keep up', async () => {
    const created = await service.post('/v1/analytics/export', { voucher_ids: [voucherId], metrics: ['uses'] });
    const done = await waitForExport(() => service.get(`/v1/analytics/export/${created.body.export_id}`));
    expect(done.status).to.equal('completed');
  });
});
