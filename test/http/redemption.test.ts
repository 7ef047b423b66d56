import { expect } from 'chai';
import sinon from 'sinon';
import { applyBody, item, rollbackBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher, percentageVoucher } from '../fixtures/vouchers.ts';
import { SANDBOX_KEY, TestService } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';
import { loseEveryRace } from '../support/races.ts';
import { APPLY_MODES } from '../../src/application/context.ts';

const MINUTE = 60 * 1000;
const iso = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A 10,000-cent order whose two lines total 9,669 cents (the rest is shipping, never discounted). */
const ORDER = {
  value: 10_000,
  currency: 'EUR',
  items: [
    { id: 'A', price: 3333, quantity: 2 },
    { id: 'B', price: 1001, quantity: 3 },
  ],
};

for (const applyMode of APPLY_MODES)
  describe(`HTTP redemption: validate, apply, rollback, Idempotency-Key (apply: ${applyMode})`, () => {
    let service: TestService;

    before(async () => {
      service = await TestService.start({ applyMode });
    });
    after(async () => {
      await service.stop();
    });

    const voucherEvents = async (id: string): Promise<string[]> =>
      (await service.sandbox.events.readStream(`voucher-${id}`)).map((e) => e.type);

    describe('POST /v1/vouchers/validate', () => {
      let save15: any;
      before(async () => {
        save15 = await service.createVoucher(
          percentageVoucher('SAVE15', { value: 15, conditions: { min_order_value: 5000 } }),
        );
      });

      it('returns the full validation result with exact cents', async () => {
        const res = await service.post('/v1/vouchers/validate', { code: 'SAVE15', order: ORDER });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        // 15% of 9,669 = 1,450.35 → 1,450; split 6,666 : 3,003 by largest remainder → 1,000 + 450
        expect(res.body).to.deep.equal({
          is_valid: true,
          voucher: { id: save15.id, code: 'SAVE15', type: 'percentage', value: 15 },
          discount_amount: 1450,
          final_amount: 8550,
          currency: 'EUR',
          validation_details: { min_order_value_met: true, usage_limit_not_exceeded: true, valid_date_range: true },
          applied_to: [
            { item_id: 'A', original_price: 6666, discount_amount: 1000, final_price: 5666 },
            { item_id: 'B', original_price: 3003, discount_amount: 450, final_price: 2553 },
          ],
          conditions_met: ['active', 'min_order_value'],
        });
        const lines = res.body.applied_to as Array<{ discount_amount: number }>;
        expect(lines.reduce((s, l) => s + l.discount_amount, 0)).to.equal(res.body.discount_amount);
      });

      it('adds customer_eligible only when a customer is sent, and echoes the order currency', async () => {
        const res = await service.post(
          '/v1/vouchers/validate',
          validateBody('SAVE15', { value: 8000, currency: 'GBP' }, { id: 'cust-9', segment: 'vip' }),
        );
        expect(res.status).to.equal(200);
        expect(res.body.validation_details).to.deep.equal({
          min_order_value_met: true,
          usage_limit_not_exceeded: true,
          valid_date_range: true,
          customer_eligible: true,
        });
        expect(res.body.currency).to.equal('GBP');
        expect(res.body.discount_amount).to.equal(1200);
        expect(res.body.final_amount).to.equal(6800);
        expect(res.body.applied_to).to.deep.equal([]);
      });

      it('rounds half up to the cent', async () => {
        await service.createVoucher(percentageVoucher('HALFUP', { value: 12.5 }));
        // 12.5% of 1,004 = 125.5 → 126; of 1,003 = 125.375 → 125
        expect(
          (await service.post('/v1/vouchers/validate', validateBody('HALFUP', { value: 1004 }))).body.discount_amount,
        ).to.equal(126);
        expect(
          (await service.post('/v1/vouchers/validate', validateBody('HALFUP', { value: 1003 }))).body.discount_amount,
        ).to.equal(125);
      });

      it('never discounts more than the base (fixed above the order value)', async () => {
        await service.createVoucher(fixedVoucher('BIGFIXED', { value: 5000 }));
        const res = await service.post(
          '/v1/vouchers/validate',
          validateBody('BIGFIXED', { value: 3000, currency: 'USD' }),
        );
        expect(res.body).to.include({ discount_amount: 3000, final_amount: 0, currency: 'USD' });
      });

      it('finds codes case-insensitively', async () => {
        const res = await service.post('/v1/vouchers/validate', { code: 'save15', order: ORDER });
        expect(res.status).to.equal(200);
        expect(res.body.voucher).to.deep.equal({ id: save15.id, code: 'SAVE15', type: 'percentage', value: 15 });
        expect(res.body.discount_amount).to.equal(1450);
      });

      it('answers 404 VOUCHER_NOT_FOUND {code, suggestions} with a similar code', async () => {
        const res = await service.post('/v1/vouchers/validate', { code: 'SAVE16', order: ORDER });
        expect(res.status).to.equal(404);
        expect(res.body.error.code).to.equal('VOUCHER_NOT_FOUND');
        expect(res.body.error.details.code).to.equal('SAVE16');
        expect(res.body.error.details.suggestions).to.include('SAVE15');
        expect(Object.keys(res.body.error.details).sort()).to.deep.equal(['code', 'suggestions']);

        const none = await service.post('/v1/vouchers/validate', { code: 'ZZZZZZZZZZ', order: ORDER });
        expectError(none, 404, 'VOUCHER_NOT_FOUND', { code: 'ZZZZZZZZZZ', suggestions: [] });
      });

      it('never suggests an inactive code', async () => {
        const hidden = await service.createVoucher(fixedVoucher('HIDDEN77'));
        expect((await service.delete(`/v1/vouchers/${hidden.id}`)).status).to.equal(200);
        await service.createVoucher(fixedVoucher('HIDDEN78'));
        const res = await service.post('/v1/vouchers/validate', { code: 'HIDDEN79', order: ORDER });
        expectError(res, 404, 'VOUCHER_NOT_FOUND', { code: 'HIDDEN79', suggestions: ['HIDDEN78'] });
      });

      it('never suggests a code expired by the clock, before its expiry is recorded', async () => {
        const until = iso(new Date(service.clock.now().getTime() + 10 * MINUTE));
        await service.createVoucher(fixedVoucher('LAPSING41', { conditions: { valid_until: until } }));
        await service.createVoucher(fixedVoucher('LAPSING42'));
        const before = await service.post('/v1/vouchers/validate', { code: 'LAPSING43', order: ORDER });
        expectError(before, 404, 'VOUCHER_NOT_FOUND', { code: 'LAPSING43', suggestions: ['LAPSING41', 'LAPSING42'] });
        service.clock.advance(11 * MINUTE);
        const after = await service.post('/v1/vouchers/validate', { code: 'LAPSING43', order: ORDER });
        expectError(after, 404, 'VOUCHER_NOT_FOUND', { code: 'LAPSING43', suggestions: ['LAPSING42'] });
      });

      it('agrees with apply on an order id that already carries the voucher', async () => {
        const v = await service.createVoucher(fixedVoucher('USEDORDER', { value: 500 }));
        const order = { id: 'used-order-1', value: 4000, currency: 'EUR' };
        expect((await service.post('/v1/vouchers/apply', applyBody('USEDORDER', order.id, order))).status).to.equal(
          201,
        );
        // another order under the same id: apply would be 409, so validate is too
        const other = await service.post('/v1/vouchers/validate', validateBody('USEDORDER', { ...order, value: 9000 }));
        expectError(other, 409, 'VOUCHER_ALREADY_APPLIED', { order_id: order.id, voucher_id: v.id });
        const otherCustomer = await service.post(
          '/v1/vouchers/validate',
          validateBody('USEDORDER', order, { id: 'someone-else' }),
        );
        expect(otherCustomer.status).to.equal(409);
        // the same order validates as before
        const same = await service.post('/v1/vouchers/validate', validateBody('USEDORDER', order));
        expect(same.status).to.equal(200);
        expect(same.body.discount_amount).to.equal(500);
      });

      it('rejects an order below the minimum: VOUCHER_INVALID {reason, min_required, current_value, currency}', async () => {
        const res = await service.post(
          '/v1/vouchers/validate',
          validateBody('SAVE15', { value: 4999, currency: 'USD' }),
        );
        expectError(res, 400, 'VOUCHER_INVALID', {
          reason: 'min_order_value',
          min_required: 5000,
          current_value: 4999,
          currency: 'USD',
        });
      });

      it('rejects an inactive voucher: VOUCHER_INVALID reason inactive', async () => {
        await service.createVoucher(fixedVoucher('OFFNOW'));
        const id = (await service.post('/v1/vouchers/validate', validateBody('OFFNOW'))).body.voucher.id;
        expect((await service.put(`/v1/vouchers/${id}`, { status: 'inactive' })).status).to.equal(200);
        expectError(await service.post('/v1/vouchers/validate', validateBody('OFFNOW')), 400, 'VOUCHER_INVALID', {
          reason: 'inactive',
        });
      });

      it('rejects a voucher before valid_from: VOUCHER_INVALID reason not_yet_valid', async () => {
        const now = service.clock.now();
        const from = iso(new Date(now.getTime() + 60 * MINUTE));
        await service.createVoucher(fixedVoucher('LATER', { conditions: { valid_from: from } }));
        const res = await service.post('/v1/vouchers/validate', validateBody('LATER'));
        expectError(res, 400, 'VOUCHER_INVALID', { reason: 'not_yet_valid', valid_from: from, current_time: iso(now) });
      });

      it('rejects an order in another currency: VOUCHER_INVALID reason currency_mismatch', async () => {
        await service.createVoucher(fixedVoucher('USDONLY', { value: 100, currency: 'USD' }));
        const res = await service.post('/v1/vouchers/validate', validateBody('USDONLY', { currency: 'EUR' }));
        expectError(res, 400, 'VOUCHER_INVALID', {
          reason: 'currency_mismatch',
          required_currency: 'USD',
          current_currency: 'EUR',
        });
        const ok = await service.post('/v1/vouchers/validate', validateBody('USDONLY', { currency: 'USD' }));
        expect(ok.body).to.include({ discount_amount: 100, currency: 'USD' });
      });

      it('requires customer.id for a voucher with customer_limit: VOUCHER_INVALID reason customer_required', async () => {
        await service.createVoucher(fixedVoucher('PERCUST', { conditions: { customer_limit: 1 } }));
        expectError(await service.post('/v1/vouchers/validate', validateBody('PERCUST')), 400, 'VOUCHER_INVALID', {
          reason: 'customer_required',
        });
        expectError(
          await service.post('/v1/vouchers/validate', validateBody('PERCUST', {}, { segment: 'vip' })),
          400,
          'VOUCHER_INVALID',
          { reason: 'customer_required' },
        );
      });

      it('rejects an order with no eligible item: VOUCHER_INVALID reason no_eligible_items', async () => {
        await service.createVoucher(
          percentageVoucher('SHOESONLY', {
            value: 10,
            conditions: { product_ids: ['shoe'], excluded_product_ids: ['hat'] },
          }),
        );
        const res = await service.post(
          '/v1/vouchers/validate',
          validateBody('SHOESONLY', { value: 5000, items: [item('hat', 2500, 2)] }),
        );
        expectError(res, 400, 'VOUCHER_INVALID', {
          reason: 'no_eligible_items',
          product_ids: ['shoe'],
          excluded_product_ids: ['hat'],
        });
        // the eligible line alone forms the base: 10% of 3 × 1,234 = 370.2 → 370
        const ok = await service.post(
          '/v1/vouchers/validate',
          validateBody('SHOESONLY', { value: 9000, items: [item('hat', 2500, 2), item('shoe', 1234, 3)] }),
        );
        expect(ok.body).to.include({ discount_amount: 370, final_amount: 8630 });
        expect(ok.body.applied_to).to.deep.equal([
          { item_id: 'shoe', original_price: 3702, discount_amount: 370, final_price: 3332 },
        ]);
        expect(ok.body.conditions_met).to.deep.equal(['active', 'product_ids', 'excluded_product_ids']);
      });

      it('rejects an expired voucher: VOUCHER_EXPIRED {expired_at, current_time}', async () => {
        const start = service.clock.now();
        const until = iso(new Date(start.getTime() + 10 * MINUTE));
        await service.createVoucher(fixedVoucher('SHORTLIVED', { conditions: { valid_until: until } }));
        expect((await service.post('/v1/vouchers/validate', validateBody('SHORTLIVED'))).status).to.equal(200);
        service.clock.advance(11 * MINUTE);
        const res = await service.post('/v1/vouchers/validate', validateBody('SHORTLIVED'));
        expectError(res, 400, 'VOUCHER_EXPIRED', { expired_at: until, current_time: iso(service.clock.now()) });
      });

      it('rejects a used-up voucher: USAGE_LIMIT_EXCEEDED total_uses', async () => {
        await service.createVoucher(fixedVoucher('ONCE', { conditions: { max_uses: 1 } }));
        expect((await service.post('/v1/vouchers/apply', applyBody('ONCE', 'once-1'))).status).to.equal(201);
        const res = await service.post('/v1/vouchers/validate', validateBody('ONCE'));
        expectError(res, 400, 'USAGE_LIMIT_EXCEEDED', { max_uses: 1, current_uses: 1, limit_type: 'total_uses' });
        const applied = await service.post('/v1/vouchers/apply', applyBody('ONCE', 'once-2'));
        expectError(applied, 400, 'USAGE_LIMIT_EXCEEDED', { max_uses: 1, current_uses: 1, limit_type: 'total_uses' });
      });

      it('rejects a customer past customer_limit: USAGE_LIMIT_EXCEEDED customer_uses', async () => {
        await service.createVoucher(fixedVoucher('TWICEEACH', { conditions: { customer_limit: 2 } }));
        for (const orderId of ['tw-1', 'tw-2']) {
          const res = await service.post('/v1/vouchers/apply', applyBody('TWICEEACH', orderId, {}, { id: 'alice' }));
          expect(res.status).to.equal(201);
        }
        const res = await service.post('/v1/vouchers/validate', validateBody('TWICEEACH', {}, { id: 'alice' }));
        expectError(res, 400, 'USAGE_LIMIT_EXCEEDED', { max_uses: 2, current_uses: 2, limit_type: 'customer_uses' });
        const applied = await service.post('/v1/vouchers/apply', applyBody('TWICEEACH', 'tw-3', {}, { id: 'alice' }));
        expectError(applied, 400, 'USAGE_LIMIT_EXCEEDED', {
          max_uses: 2,
          current_uses: 2,
          limit_type: 'customer_uses',
        });
        // another customer is not affected
        const bob = await service.post('/v1/vouchers/validate', validateBody('TWICEEACH', {}, { id: 'bob' }));
        expect(bob.status).to.equal(200);
        expect(bob.body.conditions_met).to.deep.equal(['active', 'customer_limit']);
      });

      it('rejects item lines above order.value and bad order shapes with INVALID_REQUEST', async () => {
        const over = await service.post('/v1/vouchers/validate', {
          code: 'SAVE15',
          order: { value: 1000, items: [{ id: 'x', price: 600, quantity: 2 }] },
        });
        expect(over.status).to.equal(400);
        expect(over.body.error.details.map((d: any) => d.field)).to.deep.equal(['order.items']);
        const missing = await service.post('/v1/vouchers/validate', { code: 'SAVE15' });
        expect(missing.status).to.equal(400);
        expect(missing.body.error.details).to.deep.equal([{ field: 'order', message: 'is required' }]);
        const fraction = await service.post('/v1/vouchers/validate', { code: 'SAVE15', order: { value: 100.5 } });
        expect(fraction.body.error.details.map((d: any) => d.field)).to.deep.equal(['order.value']);
      });

      it('changes nothing: usage_count stays 0 and no event is recorded', async () => {
        const v = await service.createVoucher(fixedVoucher('LOOKONLY', { conditions: { max_uses: 1 } }));
        const head = await service.sandbox.events.headPosition();
        for (let i = 0; i < 3; i += 1) {
          const res = await service.post(
            '/v1/vouchers/validate',
            validateBody('LOOKONLY', { id: `look-${i}` }, { id: 'c' }),
          );
          expect(res.status).to.equal(200);
        }
        expect(await service.sandbox.events.headPosition()).to.equal(head);
        expect(await voucherEvents(v.id)).to.deep.equal(['VoucherCreated']);
        const fetched = await service.get(`/v1/vouchers/${v.id}`);
        expect(fetched.body.usage_count).to.equal(0);
        expect(fetched.body.usage_history).to.deep.equal([]);
      });
    });

    describe('POST /v1/vouchers/apply', () => {
      let v: any;
      before(async () => {
        v = await service.createVoucher(
          percentageVoucher('APPLY10', { value: 10, conditions: { min_order_value: 1000 } }),
        );
      });

      it('applies: 201 with the application; usage_count rises; one VoucherApplied event', async () => {
        service.clock.set('2026-05-05T05:05:05.555Z');
        const res = await service.post('/v1/vouchers/apply', applyBody('apply10', 'order-1', ORDER, { id: 'cust-1' }));
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.headers.get('idempotent-replayed')).to.equal(null);
        expect(res.body.id).to.match(/^va_[A-Za-z0-9]{16,}$/);
        // 10% of 9,669 = 966.9 → 967
        expect(res.body).to.deep.equal({
          id: res.body.id,
          voucher: { id: v.id, code: 'APPLY10' },
          order_id: 'order-1',
          customer_id: 'cust-1',
          discount_amount: 967,
          final_amount: 9033,
          currency: 'EUR',
          status: 'applied',
          applied_at: '2026-05-05T05:05:05Z',
        });
        const fetched = await service.get(`/v1/vouchers/${v.id}`);
        expect(fetched.body.usage_count).to.equal(1);
        expect(fetched.body.usage_history).to.have.length(1);
        expect(fetched.body.usage_history[0]).to.deep.equal({
          id: res.body.id,
          order_id: 'order-1',
          customer_id: 'cust-1',
          discount_amount: 967,
          final_amount: 9033,
          currency: 'EUR',
          status: 'applied',
          applied_at: '2026-05-05T05:05:05Z',
        });
        expect(await voucherEvents(v.id)).to.deep.equal(['VoucherCreated', 'VoucherApplied']);
      });

      it('answers a repeat with the same body 200, Idempotent-Replayed: true, the same application and no new event', async () => {
        service.clock.advance(5 * MINUTE);
        const first = (await service.get(`/v1/vouchers/${v.id}/applications`)).body.data[0];
        for (const body of [
          { code: 'APPLY10', order_id: 'order-1', order: ORDER, customer: { id: 'cust-1' } },
          { code: 'APPLY10', order_id: 'order-1' }, // no order and customer: the stored application
          {
            code: 'APPLY10',
            order_id: 'order-1',
            order: { ...ORDER, items: ORDER.items.map((i) => ({ quantity: i.quantity, price: i.price, id: i.id })) },
          },
        ]) {
          const res = await service.post('/v1/vouchers/apply', body);
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          expect(res.headers.get('idempotent-replayed')).to.equal('true');
          expect(res.body).to.include({
            id: first.id,
            applied_at: '2026-05-05T05:05:05Z',
            discount_amount: 967,
            final_amount: 9033,
          });
        }
        expect(await voucherEvents(v.id)).to.deep.equal(['VoucherCreated', 'VoucherApplied']);
        expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(1);
      });

      it('rejects a repeat with another order value, items or customer: 409 VOUCHER_ALREADY_APPLIED {order_id, voucher_id}', async () => {
        const details = { order_id: 'order-1', voucher_id: v.id };
        expectError(
          await service.post(
            '/v1/vouchers/apply',
            applyBody('APPLY10', 'order-1', { ...ORDER, value: 10_001 }, { id: 'cust-1' }),
          ),
          409,
          'VOUCHER_ALREADY_APPLIED',
          details,
        );
        expectError(
          await service.post(
            '/v1/vouchers/apply',
            applyBody('APPLY10', 'order-1', { ...ORDER, items: [ORDER.items[0]] }),
          ),
          409,
          'VOUCHER_ALREADY_APPLIED',
          details,
        );
        expectError(
          await service.post('/v1/vouchers/apply', applyBody('APPLY10', 'order-1', ORDER, { id: 'cust-2' })),
          409,
          'VOUCHER_ALREADY_APPLIED',
          details,
        );
        expectError(
          await service.post('/v1/vouchers/apply', {
            code: 'APPLY10',
            order_id: 'order-1',
            customer: { id: 'cust-2' },
          }),
          409,
          'VOUCHER_ALREADY_APPLIED',
          details,
        );
        expect(await voucherEvents(v.id)).to.deep.equal(['VoucherCreated', 'VoucherApplied']);
      });

      it('applies with only order_id from the quote kept by validate (same discount)', async () => {
        const quote = await service.post(
          '/v1/vouchers/validate',
          validateBody('APPLY10', { ...ORDER, id: 'order-q1' }, { id: 'cust-q' }),
        );
        expect(quote.status).to.equal(200);
        expect(quote.body.discount_amount).to.equal(967);
        service.clock.advance(29 * MINUTE);
        const res = await service.post('/v1/vouchers/apply', { code: 'APPLY10', order_id: 'order-q1' });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.body).to.include({
          order_id: 'order-q1',
          customer_id: 'cust-q',
          discount_amount: 967,
          final_amount: 9033,
          currency: 'EUR',
        });
      });

      it('forgets the quote after 30 minutes: 400 INVALID_REQUEST field order', async () => {
        expect(
          (await service.post('/v1/vouchers/validate', validateBody('APPLY10', { id: 'order-q2', value: 2000 })))
            .status,
        ).to.equal(200);
        service.clock.advance(31 * MINUTE);
        const res = await service.post('/v1/vouchers/apply', { code: 'APPLY10', order_id: 'order-q2' });
        expect(res.status).to.equal(400);
        expect(res.body.error.code).to.equal('INVALID_REQUEST');
        expect(res.body.error.details).to.have.length(1);
        expect(res.body.error.details[0].field).to.equal('order');
      });

      it('needs an order or a quote: 400 INVALID_REQUEST field order', async () => {
        const res = await service.post('/v1/vouchers/apply', { code: 'APPLY10', order_id: 'never-validated' });
        expect(res.status).to.equal(400);
        expect(res.body.error.code).to.equal('INVALID_REQUEST');
        expect(res.body.error.details.map((d: any) => d.field)).to.deep.equal(['order']);
      });

      it('does not use a quote of another order id or another voucher', async () => {
        await service.createVoucher(fixedVoucher('OTHERV'));
        expect(
          (await service.post('/v1/vouchers/validate', validateBody('OTHERV', { id: 'order-q3', value: 2000 }))).status,
        ).to.equal(200);
        const res = await service.post('/v1/vouchers/apply', { code: 'APPLY10', order_id: 'order-q3' });
        expect(res.status).to.equal(400);
        expect(res.body.error.details.map((d: any) => d.field)).to.deep.equal(['order']);
      });

      it('re-evaluates a quote against the current voucher (validate, deactivate, apply → inactive)', async () => {
        const w = await service.createVoucher(fixedVoucher('REEVAL', { value: 500 }));
        expect(
          (await service.post('/v1/vouchers/validate', validateBody('REEVAL', { id: 'order-r1', value: 3000 }))).status,
        ).to.equal(200);
        expect((await service.delete(`/v1/vouchers/${w.id}`)).status).to.equal(200);
        const res = await service.post('/v1/vouchers/apply', { code: 'REEVAL', order_id: 'order-r1' });
        expectError(res, 400, 'VOUCHER_INVALID', { reason: 'inactive' });
        expect((await service.get(`/v1/vouchers/${w.id}`)).body.usage_count).to.equal(0);
      });

      it('re-evaluates a quote against the current value (validate, update, apply → new discount)', async () => {
        const w = await service.createVoucher(fixedVoucher('REEVAL2', { value: 500 }));
        expect(
          (await service.post('/v1/vouchers/validate', validateBody('REEVAL2', { id: 'order-r2', value: 3000 }))).body
            .discount_amount,
        ).to.equal(500);
        expect((await service.put(`/v1/vouchers/${w.id}`, { value: 700 })).status).to.equal(200);
        const res = await service.post('/v1/vouchers/apply', { code: 'REEVAL2', order_id: 'order-r2' });
        expect(res.status).to.equal(201);
        expect(res.body).to.include({ discount_amount: 700, final_amount: 2300 });
      });

      it('rejects an order below the minimum on apply as on validate', async () => {
        const res = await service.post(
          '/v1/vouchers/apply',
          applyBody('APPLY10', 'small', { value: 999, currency: 'EUR' }),
        );
        expectError(res, 400, 'VOUCHER_INVALID', {
          reason: 'min_order_value',
          min_required: 1000,
          current_value: 999,
          currency: 'EUR',
        });
      });

      it('answers 404 VOUCHER_NOT_FOUND for an unknown code', async () => {
        const res = await service.post('/v1/vouchers/apply', applyBody('APPLY11', 'x'));
        expect(res.status).to.equal(404);
        expect(res.body.error.code).to.equal('VOUCHER_NOT_FOUND');
        expect(res.body.error.details.code).to.equal('APPLY11');
        expect(res.body.error.details.suggestions).to.include('APPLY10');
      });

      it('rejects a body without order_id', async () => {
        const res = await service.post('/v1/vouchers/apply', { code: 'APPLY10', order: { value: 1000 } });
        expect(res.status).to.equal(400);
        expect(res.body.error.details).to.deep.equal([{ field: 'order_id', message: 'is required' }]);
      });
    });

    describe('POST /v1/vouchers/applications/{id}/rollback', () => {
      it('rolls back: 200 rolled_back, usage_count down; a repeat is 200 unchanged; the order can be applied again', async () => {
        const v = await service.createVoucher(
          fixedVoucher('ROLLME', { value: 250, conditions: { customer_limit: 1 } }),
        );
        const applied = await service.post(
          '/v1/vouchers/apply',
          applyBody('ROLLME', 'rb-1', { currency: 'USD' }, { id: 'carol' }),
        );
        expect(applied.status).to.equal(201);
        expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(1);

        const res = await service.post(`/v1/vouchers/applications/${applied.body.id}/rollback`, rollbackBody());
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        expect(res.body).to.deep.equal({ ...applied.body, status: 'rolled_back' });
        expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(0);

        const again = await service.post(`/v1/vouchers/applications/${applied.body.id}/rollback`);
        expect(again.status).to.equal(200);
        expect(again.body).to.deep.equal({ ...applied.body, status: 'rolled_back' });
        expect(await voucherEvents(v.id)).to.deep.equal([
          'VoucherCreated',
          'VoucherApplied',
          'VoucherApplicationRolledBack',
        ]);
        expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(0);

        const history = await service.get(`/v1/vouchers/${v.id}/applications`);
        expect(history.body.data.map((a: any) => [a.id, a.status])).to.deep.equal([[applied.body.id, 'rolled_back']]);

        // the customer's use is given back too (customer_limit 1), and the order is free again
        const reapplied = await service.post(
          '/v1/vouchers/apply',
          applyBody('ROLLME', 'rb-1', { value: 1200, currency: 'USD' }, { id: 'carol' }),
        );
        expect(reapplied.status, JSON.stringify(reapplied.body)).to.equal(201);
        expect(reapplied.body.id).to.not.equal(applied.body.id);
        expect(reapplied.body).to.include({
          order_id: 'rb-1',
          discount_amount: 250,
          final_amount: 950,
          status: 'applied',
        });
        expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(1);

        // The list's total: both applications, the rolled back one included, read from the
        // voucher's usage document; a document an earlier build wrote (no total) is counted.
        const page = (await service.get(`/v1/vouchers/${v.id}/applications?limit=1`)).body;
        expect([page.total, page.data.length, page.has_more]).to.deep.equal([2, 1, true]);
        const usage = await service.sandbox.reads.get('voucher_usage', v.id);
        expect(usage).to.include({ usage_count: 1, applications_total: 2 });
        const { applications_total, ...earlier } = usage!;
        expect(applications_total).to.equal(2);
        await service.sandbox.reads.writeBatch({ upserts: [{ collection: 'voucher_usage', doc: earlier }] });
        expect((await service.get(`/v1/vouchers/${v.id}/applications`)).body.total).to.equal(2);
        await service.sandbox.reads.writeBatch({
          upserts: [{ collection: 'voucher_usage', doc: { ...earlier, applications_total: 5 } }],
        });
        expect((await service.get(`/v1/vouchers/${v.id}/applications`)).body.total, 'read, not counted').to.equal(5);
      });

      it('answers 404 APPLICATION_NOT_FOUND for an unknown application', async () => {
        const res = await service.post('/v1/vouchers/applications/va_DoesNotExist0000000000/rollback', {});
        expectError(res, 404, 'APPLICATION_NOT_FOUND', { application_id: 'va_DoesNotExist0000000000' });
        const malformed = await service.post('/v1/vouchers/applications/nope/rollback');
        expectError(malformed, 404, 'APPLICATION_NOT_FOUND', { application_id: 'nope' });
      });
    });

    describe('Idempotency-Key', () => {
      it('on POST /vouchers: same key and body → the first response again, one voucher; other body → 409', async () => {
        const headers = { 'Idempotency-Key': 'create-key-1' };
        const body = fixedVoucher('IDEMCREATE', { value: 300 });
        const first = await service.post('/v1/vouchers', body, { headers });
        expect(first.status).to.equal(201);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        service.clock.advance(MINUTE);
        const second = await service.post('/v1/vouchers', body, { headers });
        expect(second.status).to.equal(201);
        expect(second.headers.get('idempotent-replayed')).to.equal('true');
        expect(second.headers.get('location')).to.equal(`/v1/vouchers/${first.body.id}`);
        expect(second.body).to.deep.equal(first.body);

        const other = await service.post('/v1/vouchers', { ...body, value: 400 }, { headers });
        expectError(other, 409, 'IDEMPOTENCY_KEY_REUSED', { idempotency_key: 'create-key-1' });

        const list = await service.get('/v1/vouchers?limit=100');
        expect(list.body.data.filter((x: any) => x.code === 'IDEMCREATE')).to.have.length(1);
        expect(
          (await service.sandbox.events.readAll()).filter(
            (e) => e.type === 'VoucherCreated' && (e.data as any).code === 'IDEMCREATE',
          ),
        ).to.have.length(1);

        // without the key, the same body is a new request: the code is taken
        const noKey = await service.post('/v1/vouchers', body);
        expect(noKey.status).to.equal(409);
        expect(noKey.body.error.code).to.equal('DUPLICATE_VOUCHER_CODE');
      });

      it("keeps an apply's record under the route's whole path, so a record written before a deploy still replays", async () => {
        // The scope is `<key id>:<method>:<req.baseUrl + req.path>:<key>`: it must not depend on how
        // the routes are mounted (decision 110), or a retry after a deploy would apply again.
        await service.createVoucher(fixedVoucher('IDEMSCOPE', { value: 100 }));
        const headers = { 'Idempotency-Key': 'apply-scope-1' };
        const applied = await service.post('/v1/vouchers/apply', applyBody('IDEMSCOPE', 'ord-scope-1', ORDER), {
          headers,
        });
        expect(applied.status).to.equal(201);
        const keyId = service.embedded.keys.authenticate(SANDBOX_KEY)!.id;
        const record = (await service.sandbox.kv.get(
          'idempotency',
          `${keyId}:POST:/v1/vouchers/apply:apply-scope-1`,
        )) as {
          status: number;
          body: unknown;
        } | null;
        expect(record?.status).to.equal(201);
        expect(record?.body).to.deep.equal(applied.body);
      });

      it('keeps no result for a request that failed validation: a retry runs again (Stripe semantics)', async () => {
        const headers = { 'Idempotency-Key': 'create-key-bad' };
        const bad = percentageVoucher('IDEMBAD', { value: 101 });
        expect((await service.post('/v1/vouchers', bad, { headers })).status).to.equal(400);
        const again = await service.post('/v1/vouchers', bad, { headers });
        expect(again.status).to.equal(400);
        expect(again.headers.get('idempotent-replayed')).to.equal(null);
      });

      it('replays a domain error that the endpoint really produced (same key and body)', async () => {
        await service.createVoucher(fixedVoucher('IDEMTAKEN'));
        const headers = { 'Idempotency-Key': 'create-key-taken' };
        const body = fixedVoucher('IDEMTAKEN', { value: 200 });
        const first = await service.post('/v1/vouchers', body, { headers });
        expect(first.status).to.equal(409);
        expect(first.headers.get('idempotent-replayed')).to.equal(null);
        const again = await service.post('/v1/vouchers', body, { headers });
        expect(again.status).to.equal(409);
        expect(again.headers.get('idempotent-replayed')).to.equal('true');
        expect(again.body).to.deep.equal(first.body);
      });

      it('on POST /vouchers/apply: same key and body → same response, one event; other body → 409', async () => {
        const v = await service.createVoucher(fixedVoucher('IDEMAPPLY', { value: 150 }));
        const headers = { 'Idempotency-Key': 'apply-key-1' };
        const body = applyBody('IDEMAPPLY', 'idem-1', { value: 1000, currency: 'USD' });
        const first = await service.post('/v1/vouchers/apply', body, { headers });
        expect(first.status).to.equal(201);
        expect(first.body).to.include({ discount_amount: 150, final_amount: 850 });
        const second = await service.post('/v1/vouchers/apply', body, { headers });
        expect(second.status).to.equal(200); // an idempotent repeat of apply is 200, however it is recognised
        expect(second.headers.get('idempotent-replayed')).to.equal('true');
        expect(second.body).to.deep.equal(first.body);

        const other = await service.post('/v1/vouchers/apply', { ...body, order_id: 'idem-2' }, { headers });
        expectError(other, 409, 'IDEMPOTENCY_KEY_REUSED', { idempotency_key: 'apply-key-1' });
        expect(await voucherEvents(v.id)).to.deep.equal(['VoucherCreated', 'VoucherApplied']);
        expect((await service.get(`/v1/vouchers/${v.id}`)).body.usage_count).to.equal(1);
      });

      it('keys are scoped to the endpoint: one key on create and apply are independent', async () => {
        const headers = { 'Idempotency-Key': 'shared-key' };
        const created = await service.post('/v1/vouchers', fixedVoucher('SCOPEDKEY', { value: 100 }), { headers });
        expect(created.status).to.equal(201);
        const applied = await service.post('/v1/vouchers/apply', applyBody('SCOPEDKEY', 'sk-1', { value: 500 }), {
          headers,
        });
        expect(applied.status).to.equal(201);
        expect(applied.body.discount_amount).to.equal(100);
      });

      it('rejects an over-long key with 400 INVALID_REQUEST', async () => {
        const res = await service.post('/v1/vouchers', fixedVoucher('LONGKEY'), {
          headers: { 'Idempotency-Key': 'k'.repeat(256) },
        });
        expect(res.status).to.equal(400);
        expect(res.body.error.code).to.equal('INVALID_REQUEST');
      });
    });

    describe('a write that keeps losing the race: 409 CONCURRENT_MODIFICATION', () => {
      afterEach(() => {
        sinon.restore();
      });

      it('on PUT, DELETE, apply and rollback, with details {}, after a bounded number of attempts; nothing is written', async () => {
        const v = await service.createVoucher(fixedVoucher('RACELOST', { value: 100 }));
        const applied = await service.post('/v1/vouchers/apply', applyBody('RACELOST', 'race-0', { currency: 'USD' }));
        expect(applied.status).to.equal(201);
        const before = await voucherEvents(v.id);

        const { single, multi } = loseEveryRace(service.sandbox.events);
        expectError(await service.put(`/v1/vouchers/${v.id}`, { value: 200 }), 409, 'CONCURRENT_MODIFICATION', {});
        const putAttempts = single.callCount + multi.callCount;
        expect(putAttempts).to.be.within(2, 10); // retried, but not forever
        expectError(await service.delete(`/v1/vouchers/${v.id}`), 409, 'CONCURRENT_MODIFICATION', {});
        expectError(
          await service.post('/v1/vouchers/apply', applyBody('RACELOST', 'race-1', { currency: 'USD' })),
          409,
          'CONCURRENT_MODIFICATION',
          {},
        );
        expectError(
          await service.post(`/v1/vouchers/applications/${applied.body.id}/rollback`, {}),
          409,
          'CONCURRENT_MODIFICATION',
          {},
        );
        sinon.restore();

        expect(await voucherEvents(v.id)).to.deep.equal(before);
        const now = await service.get(`/v1/vouchers/${v.id}`);
        expect(now.body).to.include({ value: 100, status: 'active', usage_count: 1 });
      });

      it('is not kept for an Idempotency-Key: the retry runs again and succeeds', async () => {
        await service.createVoucher(fixedVoucher('RACEKEY', { value: 100 }));
        const headers = { 'Idempotency-Key': 'race-key-1' };
        const body = applyBody('RACEKEY', 'race-key-order', { value: 1000, currency: 'USD' });
        loseEveryRace(service.sandbox.events);
        expectError(await service.post('/v1/vouchers/apply', body, { headers }), 409, 'CONCURRENT_MODIFICATION', {});
        sinon.restore();
        const retry = await service.post('/v1/vouchers/apply', body, { headers });
        expect(retry.status).to.equal(201);
        expect(retry.headers.get('idempotent-replayed')).to.equal(null);
        expect(retry.body).to.include({ discount_amount: 100, final_amount: 900 });
      });
    });
  });
