import { expect } from 'chai';
import sinon from 'sinon';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { TestService, type TestResponse } from '../support/harness.ts';
import { APPLY_MODES } from '../../src/application/context.ts';

const countBy = (responses: TestResponse[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const r of responses) {
    const key = r.status < 300 ? String(r.status) : `${r.status} ${r.body?.error?.code}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

for (const applyMode of APPLY_MODES)
  describe(`HTTP concurrency: limits and uniqueness hold under parallel requests (apply: ${applyMode})`, () => {
    let service: TestService;

    before(async () => {
      service = await TestService.start({ applyMode });
    });
    after(async () => {
      await service.stop();
    });

    const appliedEvents = async (voucherId: string) =>
      (await service.sandbox.events.readStream(`voucher-${voucherId}`)).filter((e) => e.type === 'VoucherApplied');

    /**
     * 200 concurrent applies of a fixed 200-cent voucher limited to 50 uses (`max_uses`, or
     * `customer_limit` with every apply by one customer): exactly 50 succeed, each with its own
     * application and order, and the read models and the event log agree on 50.
     */
    const raceForFifty = async (
      code: string,
      conditions: Record<string, number>,
      limitType: string,
      customer?: { id: string },
    ) => {
      const v = await service.createVoucher(fixedVoucher(code, { value: 200, conditions }));
      const responses = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          service.post(
            '/v1/vouchers/apply',
            applyBody(code, `${code}-${i}`, { value: 1000 + i, currency: 'USD' }, customer),
          ),
        ),
      );
      expect(countBy(responses)).to.deep.equal({ 201: 50, '400 USAGE_LIMIT_EXCEEDED': 150 });
      for (const r of responses.filter((x) => x.status === 400)) {
        expect(r.body.error.details).to.deep.equal({ max_uses: 50, current_uses: 50, limit_type: limitType });
      }
      const winners = responses.filter((r) => r.status === 201);
      expect(new Set(winners.map((r) => r.body.id)).size).to.equal(50);
      expect(new Set(winners.map((r) => r.body.order_id)).size).to.equal(50);
      for (const r of winners) {
        const i = Number(String(r.body.order_id).slice(`${code}-`.length));
        expect(r.body).to.include({ customer_id: customer?.id ?? null, discount_amount: 200, final_amount: 800 + i });
      }

      const fetched = await service.get(`/v1/vouchers/${v.id}`);
      expect(fetched.body.usage_count).to.equal(50);
      expect(fetched.body.status).to.equal('active');
      const events = await appliedEvents(v.id);
      expect(events).to.have.length(50);
      expect(new Set(events.map((e) => (e.data as any).orderId))).to.deep.equal(
        new Set(winners.map((r) => r.body.order_id)),
      );
      const apps = await service.get(`/v1/vouchers/${v.id}/applications?limit=100`);
      expect(apps.body.total).to.equal(50);
      // The orders: each winner carries the voucher; a loser's reservation (two-append) was released.
      for (const [i, r] of responses.entries()) {
        const types = (await service.sandbox.events.readStream(`order-${code}-${i}`)).map((e) => e.type);
        if (applyMode === 'atomic') expect(types).to.deep.equal(r.status === 201 ? ['OrderVoucherConfirmed'] : []);
        else if (r.status === 201) expect(types).to.deep.equal(['OrderVoucherReserved', 'OrderVoucherConfirmed']);
        else expect([[], ['OrderVoucherReserved', 'OrderVoucherDetached']]).to.deep.include(types);
      }
      return v;
    };

    it('200 concurrent applies of a voucher with max_uses 50: exactly 50 succeed, 150 USAGE_LIMIT_EXCEEDED', async () => {
      await raceForFifty('RUSH50', { max_uses: 50 }, 'total_uses');
    });

    it('200 concurrent applies by one customer of a voucher with customer_limit 50: exactly 50 succeed, 150 USAGE_LIMIT_EXCEEDED', async () => {
      const v = await raceForFifty('CUST50', { customer_limit: 50 }, 'customer_uses', { id: 'dave' });
      // The limit is per customer: another customer still can.
      const erin = await service.post(
        '/v1/vouchers/apply',
        applyBody('CUST50', 'cust-erin', { value: 2000 }, { id: 'erin' }),
      );
      expect(erin.status).to.equal(201);
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(51);
    });

    it('50 concurrent creates of the same code (any case): exactly one 201 and 49 DUPLICATE_VOUCHER_CODE', async () => {
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          service.post('/v1/vouchers', fixedVoucher(i % 2 === 0 ? 'RACECODE' : 'racecode', { value: 100 + i })),
        ),
      );
      expect(countBy(responses)).to.deep.equal({ 201: 1, '409 DUPLICATE_VOUCHER_CODE': 49 });
      const winner = responses.find((r) => r.status === 201)!;
      for (const r of responses.filter((x) => x.status === 409)) {
        expect(r.body.error.details.voucher_id).to.equal(winner.body.id);
      }
      const list = await service.get('/v1/vouchers?limit=100');
      expect(
        list.body.data.filter((x: any) => x.code.toLowerCase() === 'racecode').map((x: any) => x.id),
      ).to.deep.equal([winner.body.id]);
      const created = (await service.sandbox.events.readAll()).filter(
        (e) => e.type === 'VoucherCreated' && String((e.data as any).code).toLowerCase() === 'racecode',
      );
      expect(created).to.have.length(1);
      const validated = await service.post('/v1/vouchers/validate', validateBody('RaceCode', { value: 5000 }));
      expect(validated.body.voucher.id).to.equal(winner.body.id);
      expect(validated.body.discount_amount).to.equal(winner.body.value);
    });

    it('20 concurrent identical applies of one order: one 201, 19 replays (200) of the same application, one event', async () => {
      const v = await service.createVoucher(fixedVoucher('SAMEORDER', { value: 500 }));
      const body = applyBody('SAMEORDER', 'same-1', { value: 4000, currency: 'EUR' }, { id: 'fay' });
      const responses = await Promise.all(Array.from({ length: 20 }, () => service.post('/v1/vouchers/apply', body)));
      expect(countBy(responses)).to.deep.equal({ 201: 1, 200: 19 });
      const ids = new Set(responses.map((r) => r.body.id));
      expect(ids.size).to.equal(1);
      for (const r of responses) {
        expect(r.body).to.include({ order_id: 'same-1', discount_amount: 500, final_amount: 3500, currency: 'EUR' });
        expect(r.headers.get('idempotent-replayed')).to.equal(r.status === 200 ? 'true' : null);
      }
      expect(await appliedEvents(v.id)).to.have.length(1);
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(1);
    });

    it('concurrent applies of one order with different bodies: one wins, the others are 409 VOUCHER_ALREADY_APPLIED', async () => {
      const v = await service.createVoucher(fixedVoucher('ONEORDER'));
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          service.post('/v1/vouchers/apply', applyBody('ONEORDER', 'one-1', { value: 1000 + i })),
        ),
      );
      expect(countBy(responses)).to.deep.equal({ 201: 1, '409 VOUCHER_ALREADY_APPLIED': 9 });
      for (const r of responses.filter((x) => x.status === 409))
        expect(r.body.error.details).to.deep.equal({ order_id: 'one-1', voucher_id: v.id });
      expect(await appliedEvents(v.id)).to.have.length(1);
    });

    it('10 concurrent creates with one Idempotency-Key: the same 201 voucher for all, one voucher created', async () => {
      const headers = { 'Idempotency-Key': 'concurrent-create-key' };
      const body = fixedVoucher('IDEMRACE');
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => service.post('/v1/vouchers', body, { headers })),
      );
      expect(countBy(responses)).to.deep.equal({ 201: 10 });
      expect(new Set(responses.map((r) => r.body.id)).size).to.equal(1);
      expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).to.have.length(9);
      const created = (await service.sandbox.events.readAll()).filter(
        (e) => e.type === 'VoucherCreated' && (e.data as any).code === 'IDEMRACE',
      );
      expect(created).to.have.length(1);
    });

    it('one Idempotency-Key under concurrency also holds when the key-value store answers slowly', async () => {
      // The KvStore port is asynchronous (a networked store takes time to answer): requests must
      // not both miss the stored response and both run.
      const kv = service.sandbox.kv;
      const slow = () => new Promise((resolve) => setTimeout(resolve, 5));
      const get = kv.get.bind(kv);
      const put = kv.put.bind(kv);
      const stubs = [
        sinon.stub(kv, 'get').callsFake(async (namespace: string, key: string) => {
          await slow();
          return get(namespace, key);
        }),
        sinon.stub(kv, 'put').callsFake(async (namespace: string, key: string, value: unknown, expiresAt: number) => {
          await slow();
          return put(namespace, key, value, expiresAt);
        }),
      ];
      try {
        const headers = { 'Idempotency-Key': 'slow-store-key' };
        const responses = await Promise.all(
          Array.from({ length: 10 }, () => service.post('/v1/vouchers', fixedVoucher('SLOWKV'), { headers })),
        );
        expect(countBy(responses)).to.deep.equal({ 201: 10 });
        expect(new Set(responses.map((r) => r.body.id)).size).to.equal(1);
        expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).to.have.length(9);
      } finally {
        stubs.forEach((stub) => stub.restore());
      }
      const again = await service.post('/v1/vouchers', fixedVoucher('SLOWKV'), {
        headers: { 'Idempotency-Key': 'slow-store-key' },
      });
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
    });

    it('concurrent rollbacks of one application: usage_count goes down by exactly one', async () => {
      const v = await service.createVoucher(fixedVoucher('ROLLRACE'));
      for (const id of ['rr-1', 'rr-2']) {
        expect((await service.post('/v1/vouchers/apply', applyBody('ROLLRACE', id))).status).to.equal(201);
      }
      const target = (await service.get(`/v1/vouchers/${v.id}/applications`)).body.data[0].id;
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => service.post(`/v1/vouchers/applications/${target}/rollback`)),
      );
      expect(countBy(responses)).to.deep.equal({ 200: 10 });
      for (const r of responses) expect(r.body).to.include({ id: target, status: 'rolled_back' });
      expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(1);
      const rolled = (await service.sandbox.events.readStream(`voucher-${v.id}`)).filter(
        (e) => e.type === 'VoucherApplicationRolledBack',
      );
      expect(rolled).to.have.length(1);
    });
  });
