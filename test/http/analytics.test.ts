/**
 * Analytics endpoints over the hand-computed fixture of test/support/analyticsFixture.ts: every
 * figure is asserted exactly. Window under test: 2026-03-02..2026-03-08 unless stated.
 */
import { expect } from 'chai';
import { applyBody } from '../fixtures/orders.ts';
import { PRODUCTION_KEY, TestService } from '../support/harness.ts';
import { buildFixture, NOW, settle, type Fixture } from '../support/analyticsFixture.ts';

describe('HTTP analytics: performance, trends, customers', function () {
  this.timeout(60_000);
  let service: TestService;
  let fx: Fixture;

  before(async () => {
    service = await TestService.start();
    fx = await buildFixture(service);
  });
  after(async () => {
    await service.stop();
  });

  const get = (path: string) => service.get(`/v1/analytics/vouchers/${fx.p.id}/${path}`);

  describe('performance', () => {
    it('sums the window: uses, discount, conversion, average order, revenue, unique and repeat customers', async () => {
      const res = await get('performance?start_date=2026-03-02&end_date=2026-03-08');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.equal({
        voucher_id: fx.p.id,
        code: fx.p.code,
        performance: {
          // live uses o2, o4, o5, o7, o8 (o6 rolled back, o1 and o9 outside the window)
          total_uses: 5,
          total_discount: 2000 + 800 + 1200 + 1500 + 400,
          // attempts = validations only (decisions.md): 03-02 o2, o3, anonymous; 03-03 o4 (twice, once);
          // 03-06 o6; 03-07 o7; 03-08 o8 = 7 (o5 was applied without a validation: a use, not an attempt)
          conversion_rate: 0.7143, // 5 / 7
          avg_order_value: (20_000 + 8_000 + 12_000 + 15_000 + 4_000) / 5,
          revenue_impact: 18_000 + 7_200 + 10_800 + 13_500 + 3_600,
          unique_customers: 4, // c1, c2, c3, c4
          repeat_usage: 1, // c2 (o4, o8)
        },
        time_period: { start: '2026-03-02T00:00:00Z', end: '2026-03-08T23:59:59Z' },
        currency: null,
        generated_at: NOW,
      });
    });

    it('include_details adds the zero-filled daily breakdown and the per-segment breakdown', async () => {
      const res = await get('performance?start_date=2026-03-02&end_date=2026-03-08&include_details=true');
      expect(res.status).to.equal(200);
      const day = (
        date: string,
        uses: number,
        discount: number,
        orders: number,
        conversion_rate: number,
        avg_order_value: number,
        revenue_impact: number,
        unique_customers: number,
      ) => ({ date, uses, discount, orders, conversion_rate, avg_order_value, revenue_impact, unique_customers });
      expect(res.body.details.daily).to.deep.equal([
        day('2026-03-02', 1, 2000, 3, 0.3333, 20_000, 18_000, 1),
        day('2026-03-03', 1, 800, 1, 1, 8_000, 7_200, 1),
        day('2026-03-04', 0, 0, 0, 0, 0, 0, 0),
        day('2026-03-05', 1, 1200, 0, 0, 12_000, 10_800, 1), // o5: applied, never validated: no attempt, conversion 0 (no orders)
        day('2026-03-06', 0, 0, 1, 0, 0, 0, 0), // o6 applied and rolled back: only its attempt stays
        day('2026-03-07', 1, 1500, 1, 1, 15_000, 13_500, 1),
        day('2026-03-08', 1, 400, 1, 1, 4_000, 3_600, 1),
      ]);
      expect(res.body.details.segments).to.deep.equal([
        // regular: o4, o5, o8 live; attempts o3, o4, o5, o6, o8
        {
          segment: 'regular',
          uses: 3,
          discount: 2400,
          orders: 4,
          conversion_rate: 0.75,
          avg_order_value: 8_000,
          revenue_impact: 21_600,
        },
        {
          segment: 'vip',
          uses: 2,
          discount: 3500,
          orders: 2,
          conversion_rate: 1,
          avg_order_value: 17_500,
          revenue_impact: 31_500,
        },
        {
          segment: 'unknown',
          uses: 0,
          discount: 0,
          orders: 1,
          conversion_rate: 0,
          avg_order_value: 0,
          revenue_impact: 0,
        },
      ]);
      expect(res.body.performance.total_uses).to.equal(5);
    });

    it('day boundaries are UTC: 23:59:59 belongs to its day, 00:00:00 to the next', async () => {
      const first = await get('performance?start_date=2026-03-01&end_date=2026-03-01');
      expect(first.body.performance).to.include({
        total_uses: 1,
        total_discount: 1000,
        revenue_impact: 9000,
        unique_customers: 1,
      });
      const ninth = await get('performance?start_date=2026-03-09T00:00:00Z&end_date=2026-03-09T23:59:59Z');
      // o9 was applied without a validation: no order attempt that day, so conversion_rate is 0
      expect(ninth.body.performance).to.include({
        total_uses: 1,
        total_discount: 1000,
        revenue_impact: 9000,
        conversion_rate: 0,
      });
      expect(ninth.body.time_period).to.deep.equal({ start: '2026-03-09T00:00:00Z', end: '2026-03-09T23:59:59Z' });
    });

    it('defaults to the last 30 days up to now (2026-02-09..2026-03-10)', async () => {
      const res = await get('performance');
      expect(res.body.time_period).to.deep.equal({ start: '2026-02-09T00:00:00Z', end: '2026-03-10T23:59:59Z' });
      // uses o1, o2, o4, o5, o7, o8, o9; attempts (validations): o1, o2, o3, anonymous, o4, o6, o7, o8 = 8
      expect(res.body.performance).to.deep.equal({
        total_uses: 7,
        total_discount: 7900,
        conversion_rate: 0.875,
        avg_order_value: Math.round(79_000 / 7),
        revenue_impact: 71_100,
        unique_customers: 4,
        repeat_usage: 2, // c1 (o1, o2), c2 (o4, o8, o9)
      });
    });
  });

  describe('trends', () => {
    it('daily buckets, chosen metrics (repeated and comma-separated), summary with growth', async () => {
      const res = await get(
        'trends?start_date=2026-03-03&end_date=2026-03-09&metrics=uses,unique_customers&metrics=revenue_impact',
      );
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.interval).to.equal('day');
      expect(res.body.trends).to.deep.equal([
        { date: '2026-03-03', uses: 1, unique_customers: 1, revenue_impact: 7_200 },
        { date: '2026-03-04', uses: 0, unique_customers: 0, revenue_impact: 0 },
        { date: '2026-03-05', uses: 1, unique_customers: 1, revenue_impact: 10_800 },
        { date: '2026-03-06', uses: 0, unique_customers: 0, revenue_impact: 0 },
        { date: '2026-03-07', uses: 1, unique_customers: 1, revenue_impact: 13_500 },
        { date: '2026-03-08', uses: 1, unique_customers: 1, revenue_impact: 3_600 },
        { date: '2026-03-09', uses: 1, unique_customers: 1, revenue_impact: 9_000 },
      ]);
      // 7 days: first half 03-03..03-05 = 2 uses, second half 03-07..03-09 = 3 uses (03-06 in neither)
      expect(res.body.summary).to.deep.equal({
        total_period_uses: 5,
        total_period_discount: 4900,
        avg_daily_uses: 0.71,
        growth_rate: 0.5,
      });
    });

    it('weeks start on Monday; a customer counts once per week; default metrics', async () => {
      const res = await get(
        'trends?interval=week&start_date=2026-03-01&end_date=2026-03-14&metrics=uses,orders,unique_customers,conversion_rate,avg_order_value,discount',
      );
      expect(res.body.trends).to.deep.equal([
        // 2026-03-01 is a Sunday: its week starts Monday 02-23; only 03-01 is in the window
        {
          date: '2026-02-23',
          uses: 1,
          orders: 1,
          unique_customers: 1,
          conversion_rate: 1,
          avg_order_value: 10_000,
          discount: 1000,
        },
        // c2 used it twice this week (o4, o8): 4 customers, not 5
        {
          date: '2026-03-02',
          uses: 5,
          orders: 7,
          unique_customers: 4,
          conversion_rate: 0.7143,
          avg_order_value: 11_800,
          discount: 5900,
        },
        {
          date: '2026-03-09',
          uses: 1,
          orders: 0,
          unique_customers: 1,
          conversion_rate: 0,
          avg_order_value: 10_000,
          discount: 1000,
        },
      ]);
      // 14 days: 03-01..03-07 = 5 uses, 03-08..03-14 = 2 uses
      expect(res.body.summary).to.deep.equal({
        total_period_uses: 7,
        total_period_discount: 7900,
        avg_daily_uses: 0.5,
        growth_rate: -0.6,
      });
      const plain = await get('trends?interval=week&start_date=2026-03-01&end_date=2026-03-14');
      expect(plain.body.trends[1]).to.deep.equal({
        date: '2026-03-02',
        uses: 5,
        discount: 5900,
        orders: 7,
        conversion_rate: 0.7143,
        avg_order_value: 11_800,
      });
    });

    it('months are calendar months, zero-filled; growth is 0 when the first half had no uses', async () => {
      const res = await get('trends?interval=month&start_date=2026-01-20&end_date=2026-03-10&metrics=uses');
      expect(res.body.trends).to.deep.equal([
        { date: '2026-01-01', uses: 0 },
        { date: '2026-02-01', uses: 0 },
        { date: '2026-03-01', uses: 7 },
      ]);
      expect(res.body.summary).to.deep.equal({
        total_period_uses: 7,
        total_period_discount: 7900,
        avg_daily_uses: 0.14,
        growth_rate: 0,
      });
    });

    it('refuses unknown metrics and intervals', async () => {
      const bad = await get('trends?metrics=uses,clicks');
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('INVALID_REQUEST');
      expect(bad.body.error.details[0].field).to.equal('metrics');
      expect((await get('trends?interval=year')).status).to.equal(400);
    });
  });

  describe('customers', () => {
    it('new versus returning, customer values, segments and regions', async () => {
      const res = await get('customers?start_date=2026-03-02&end_date=2026-03-08');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.equal({
        voucher_id: fx.p.id,
        code: fx.p.code,
        time_period: { start: '2026-03-02T00:00:00Z', end: '2026-03-08T23:59:59Z' },
        customer_insights: {
          total_customers: 4,
          // c2 (first ever 03-03) and c4 (03-07); c1 first applied 03-01T23:59:59 and c3 on 02-20 (voucher Q)
          new_customers: 2,
          returning_customers: 2,
          // window spend: c1 18000, c2 7200 + 3600, c3 10800, c4 13500
          avg_customer_value: (18_000 + 10_800 + 10_800 + 13_500) / 4,
          // spend ever, any voucher, rollbacks out: c1 27000, c2 19800 (incl. o9), c3 4500 (Q) + 10800, c4 13500
          customer_lifetime_value: (27_000 + 19_800 + 15_300 + 13_500) / 4,
          top_customer_segments: [
            { segment: 'regular', count: 2, avg_order_value: 8_000, conversion_rate: 0.75 },
            { segment: 'vip', count: 2, avg_order_value: 17_500, conversion_rate: 1 },
          ],
          geographic_distribution: [
            { region: 'us', count: 2, percentage: 50 },
            { region: 'eu', count: 1, percentage: 25 },
            { region: 'unknown', count: 1, percentage: 25 },
          ],
        },
        generated_at: NOW,
      });
    });

    it('limit cuts the segment and region lists', async () => {
      const res = await get('customers?start_date=2026-03-02&end_date=2026-03-08&limit=1');
      expect(res.body.customer_insights.top_customer_segments.map((s: any) => s.segment)).to.deep.equal(['regular']);
      expect(res.body.customer_insights.geographic_distribution).to.deep.equal([
        { region: 'us', count: 2, percentage: 50 },
      ]);
      expect((await get('customers?limit=0')).status).to.equal(400);
      expect((await get('customers?limit=101')).status).to.equal(400);
    });

    it('percentages with thirds: window 03-03..03-07 has c2, c3, c4', async () => {
      const res = await get('customers?start_date=2026-03-03&end_date=2026-03-07');
      expect(res.body.customer_insights).to.deep.include({
        total_customers: 3,
        new_customers: 2,
        returning_customers: 1,
        geographic_distribution: [
          { region: 'us', count: 2, percentage: 66.67 },
          { region: 'unknown', count: 1, percentage: 33.33 },
        ],
      });
    });
  });

  describe('time periods and errors', () => {
    it('90 calendar days (both ends included) is allowed, 91 is INVALID_TIME_PERIOD', async () => {
      expect((await get('performance?start_date=2026-01-01&end_date=2026-03-31')).status).to.equal(200);
      expect((await get('trends?start_date=2026-01-01T23:59:59Z&end_date=2026-03-31T00:00:00Z')).status).to.equal(200);
      const over = await get('performance?start_date=2026-01-01&end_date=2026-04-01');
      expect(over.status).to.equal(400);
      expect(over.body.error.code).to.equal('INVALID_TIME_PERIOD');
      expect(over.body.error.details).to.deep.equal({ max_days: 90, requested_days: 91 });
      const customers = await get('customers?start_date=2025-12-01&end_date=2026-03-10');
      expect(customers.body.error.details).to.deep.equal({ max_days: 90, requested_days: 100 });
    });

    it('refuses unparseable dates, reversed ranges and unknown parameters', async () => {
      for (const q of [
        'start_date=yesterday',
        'end_date=2026-02-30',
        'start_date=2026-03-05&end_date=2026-03-04',
        'days=7',
        'include_details=maybe',
      ]) {
        const res = await get(`performance?${q}`);
        expect(res.status, q).to.equal(400);
        expect(res.body.error.code, q).to.equal('INVALID_REQUEST');
      }
    });

    it('an unknown voucher is 404 VOUCHER_NOT_FOUND {not_found, found}', async () => {
      for (const path of ['performance', 'trends', 'customers']) {
        const res = await service.get(`/v1/analytics/vouchers/v_Unknown00000000000000/${path}`);
        expect(res.status).to.equal(404);
        expect(res.body.error).to.deep.include({
          code: 'VOUCHER_NOT_FOUND',
          details: { not_found: ['v_Unknown00000000000000'], found: [] },
        });
      }
    });

    it('environments are separate: a production key does not see the sandbox voucher', async () => {
      const res = await service.get(`/v1/analytics/vouchers/${fx.p.id}/performance`, { key: PRODUCTION_KEY });
      expect(res.status).to.equal(404);
    });
  });

  describe('after new events (runs last: it changes the fixture)', () => {
    it('customer counts follow the log: a new customer, a repeat and a rollback in the window', async () => {
      const window = 'performance?start_date=2026-03-02&end_date=2026-03-08';
      expect((await get(window)).body.performance).to.include({ total_uses: 5, unique_customers: 4, repeat_usage: 1 });
      const apply = async (at: string, orderId: string, customer: string) => {
        service.clock.set(at);
        const res = await service.post('/v1/vouchers/apply', applyBody(fx.p.code, orderId, {}, { id: customer }));
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        return res.body.id as string;
      };
      await apply('2026-03-04T10:00:00Z', 'o10', 'c5');
      await apply('2026-03-05T16:00:00Z', 'o11', 'c3');
      service.clock.set(NOW);
      await settle(service);
      expect((await get(window)).body.performance).to.include({ total_uses: 7, unique_customers: 5, repeat_usage: 2 }); // c2 and c3
      expect((await service.post(`/v1/vouchers/applications/${fx.applications.o8}/rollback`, {})).status).to.equal(200);
      await settle(service);
      expect((await get(window)).body.performance).to.include({ total_uses: 6, unique_customers: 5, repeat_usage: 1 }); // c3 only
      expect((await get('performance?start_date=2026-03-08&end_date=2026-03-08')).body.performance).to.include({
        total_uses: 0,
        unique_customers: 0,
        revenue_impact: 0,
      });
    });
  });
});
