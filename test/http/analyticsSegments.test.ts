/**
 * Free-form `customer.segment` in analytics: segments named like Object.prototype's members keep
 * their totals, and one daily document holds at most MAX_SEGMENTS named segments, the rest counted
 * under `other` (analyticsDocs.ts).
 */
import { expect } from 'chai';
import { MAX_SEGMENTS, type DailyDoc } from '../../src/projections/analyticsDocs.ts';
import { settle } from '../support/analyticsFixture.ts';
import { TestService } from '../support/harness.ts';

const DAY = '2026-04-01';

describe('HTTP analytics: customer segments', function () {
  this.timeout(60_000);
  let service: TestService;

  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  const apply = async (code: string, orderId: string, segment: string, customerId = orderId) => {
    const res = await service.post('/v1/vouchers/apply', {
      code,
      order_id: orderId,
      order: { value: 10_000 },
      customer: { id: customerId, segment },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body;
  };
  const performance = async (voucherId: string) => {
    const res = await service.get(
      `/v1/analytics/vouchers/${voucherId}/performance?start_date=${DAY}&end_date=${DAY}&include_details=true`,
    );
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body;
  };

  it('segments named __proto__, constructor and toString keep their totals', async () => {
    service.clock.set(`${DAY}T10:00:00Z`);
    const v = await service.createVoucher({ code: 'PROTOSEG', type: 'fixed', value: 1_000 });
    const segments = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
    for (const [i, segment] of segments.entries()) {
      await service.post('/v1/vouchers/validate', {
        code: 'PROTOSEG',
        order: { id: `proto-${i}`, value: 10_000 },
        customer: { id: `proto-${i}`, segment },
      });
      await apply('PROTOSEG', `proto-${i}`, segment);
    }
    await settle(service);
    const body = await performance(v.id);
    expect(body.performance).to.include({ total_uses: 4, total_discount: 4_000, revenue_impact: 36_000 });
    expect(body.details.segments).to.have.deep.members(
      segments.map((segment) => ({
        segment,
        uses: 1,
        discount: 1_000,
        orders: 1,
        conversion_rate: 1,
        avg_order_value: 10_000,
        revenue_impact: 9_000,
      })),
    );
    const customers = await service.get(
      `/v1/analytics/vouchers/${v.id}/customers?start_date=${DAY}&end_date=${DAY}&limit=10`,
    );
    expect(customers.status).to.equal(200);
    expect(customers.body.customer_insights.top_customer_segments).to.have.deep.members(
      segments.map((segment) => ({ segment, count: 1, avg_order_value: 10_000, conversion_rate: 1 })),
    );
  });

  it(`holds at most ${MAX_SEGMENTS} named segments a day; the rest, and their rollbacks, count under "other"`, async () => {
    service.clock.set(`${DAY}T11:00:00Z`);
    const v = await service.createVoucher({ code: 'MANYSEG', type: 'fixed', value: 100 });
    const extra = 5;
    const applied: string[] = [];
    for (let i = 0; i < MAX_SEGMENTS + extra; i += 1) applied.push((await apply('MANYSEG', `seg-${i}`, `s${i}`)).id);
    // a named segment seen again still counts under its name
    await apply('MANYSEG', 'seg-again', 's0');
    // one application counted under "other" is rolled back: it leaves "other"
    expect((await service.post(`/v1/vouchers/applications/${applied.at(-1)}/rollback`, {})).status).to.equal(200);
    await settle(service);

    const daily = (await service.sandbox.analyticsReads.get<DailyDoc>('analytics_daily', `${v.id}|${DAY}`))!;
    const names = Object.keys(daily.segments);
    expect(names).to.have.length(MAX_SEGMENTS + 1);
    expect(names).to.include('other');
    expect(names).to.not.include(`s${MAX_SEGMENTS}`);
    expect(daily.segments.s0!.uses).to.equal(2);
    expect(daily.segments.other!.uses).to.equal(extra - 1);
    const sum = Object.values(daily.segments).reduce((n, t) => n + t.uses, 0);
    expect(sum).to.equal(daily.uses);
    expect(daily.uses).to.equal(MAX_SEGMENTS + extra);

    const body = await performance(v.id);
    expect(body.details.segments).to.have.length(MAX_SEGMENTS + 1);
    expect(body.details.segments.find((s: { segment: string }) => s.segment === 'other')).to.include({
      uses: extra - 1,
      discount: (extra - 1) * 100,
    });
  });
});
