/**
 * One order, two vouchers: a 10,000 order with TENOFF (1,000 off) then FIVEMORE (5 % of the 9,000
 * left: 450 off); the customer pays 8,550. Every figure counts that money once (decision 019):
 * the second application's final_amount is 8,550, the vouchers' revenue impacts add up to 8,550
 * (shared by discount), and so does the customer's lifetime value. A rebuild from the log gives
 * the same documents.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { collectionsOf } from '../../src/core/projection.ts';
import { rebuildReadModels } from '../../src/core/projectionGroups.ts';
import type { ReadStore } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { ANALYTICS_CHECKPOINT, analyticsProjections } from '../../src/projections/index.ts';
import { settle } from '../support/analyticsFixture.ts';
import { TestService } from '../support/harness.ts';

const DAY = '2026-05-04';
const CUSTOMER = { id: 'stacked-customer', segment: 'vip', region: 'eu' };

describe('HTTP analytics: an order carrying two vouchers counts its money once', function () {
  this.timeout(60_000);
  let service: TestService;
  let tenOff: { id: string };
  let fiveMore: { id: string };

  before(async () => {
    service = await TestService.start();
    service.clock.set(`${DAY}T10:00:00Z`);
    tenOff = await service.createVoucher({ code: 'TENOFF', type: 'fixed', value: 1_000 });
    fiveMore = await service.createVoucher({
      code: 'FIVEMORE',
      type: 'stackable',
      config: { base_discount: 5, base_discount_type: 'percentage', priority: 1, stack_rules: {} },
    });
  });
  after(async () => {
    await service.stop();
  });

  const apply = async (code: string) => {
    const res = await service.post('/v1/vouchers/apply', {
      code,
      order_id: 'stacked-1',
      order: { value: 10_000, currency: 'EUR' },
      customer: CUSTOMER,
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body;
  };
  const window = `start_date=${DAY}&end_date=${DAY}`;
  const performance = async (id: string) =>
    (await service.get(`/v1/analytics/vouchers/${id}/performance?${window}`)).body.performance;
  const insights = async (id: string) =>
    (await service.get(`/v1/analytics/vouchers/${id}/customers?${window}`)).body.customer_insights;

  it('final_amount of each application is what the order comes to with it and the vouchers before it', async () => {
    expect(await apply('TENOFF')).to.include({ discount_amount: 1_000, final_amount: 9_000 });
    expect(await apply('FIVEMORE')).to.include({ discount_amount: 450, final_amount: 8_550 });
  });

  it('revenue impact: the vouchers share the 8,550 paid in proportion to their discounts (5,897 + 2,653)', async () => {
    await settle(service);
    const [a, b] = [await performance(tenOff.id), await performance(fiveMore.id)];
    expect(a).to.include({ total_uses: 1, total_discount: 1_000, avg_order_value: 10_000, revenue_impact: 5_897 });
    expect(b).to.include({ total_uses: 1, total_discount: 450, avg_order_value: 10_000, revenue_impact: 2_653 });
    expect(a.revenue_impact + b.revenue_impact).to.equal(8_550);
  });

  it('customer value: the lifetime value is the 8,550 paid, not 18,550; the per-voucher values add up to it', async () => {
    const [a, b] = [await insights(tenOff.id), await insights(fiveMore.id)];
    expect(a.customer_lifetime_value).to.equal(8_550);
    expect(b.customer_lifetime_value).to.equal(8_550);
    expect(a.avg_customer_value + b.avg_customer_value).to.equal(8_550);
  });

  it('a rebuild from the log (npm run replay) gives the same analytics documents', async () => {
    const snapshot = async (reads: ReadStore) => {
      const out: Record<string, unknown[]> = {};
      for (const c of collectionsOf(analyticsProjections)) out[c] = await reads.find(c, {}, { sort: [['id', 1]] });
      return out;
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stacked-rebuild-'));
    const rebuilt = SqliteReadStore.open(path.join(dir, 'analytics.db'));
    try {
      await rebuildReadModels(service.sandbox.events, rebuilt, analyticsProjections, ANALYTICS_CHECKPOINT);
      expect(await snapshot(rebuilt)).to.deep.equal(await snapshot(service.sandbox.analyticsReads));
    } finally {
      await rebuilt.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after a rollback of the first voucher, the second carries the whole order: 9,550 paid', async () => {
    const [application] = (await service.get(`/v1/vouchers/${tenOff.id}/applications`)).body.data;
    expect((await service.post(`/v1/vouchers/applications/${application.id}/rollback`, {})).status).to.equal(200);
    await settle(service);
    expect(await performance(tenOff.id)).to.include({ total_uses: 0, revenue_impact: 0 });
    expect(await performance(fiveMore.id)).to.include({ total_uses: 1, revenue_impact: 9_550 });
    expect((await insights(fiveMore.id)).customer_lifetime_value).to.equal(9_550);
  });
});
