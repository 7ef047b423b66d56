/**
 * HTTP: several vouchers on one order. The order stream `order-<id>` decides, race-free, which
 * vouchers an order may carry; stacked discounts follow priority order on the amount left.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import type { DiscountType } from '../../src/domain/discount/fields.ts';
import type { StackRules } from '../../src/domain/discount/stacking.ts';
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher, percentageVoucher, stackableVoucher } from '../fixtures/vouchers.ts';
import { TestService, type TestResponse } from '../support/harness.ts';
import { APPLY_MODES } from '../../src/application/context.ts';

for (const applyMode of APPLY_MODES)
  describe(`HTTP stacking: vouchers on one order (apply: ${applyMode})`, () => {
    let service: TestService;
    before(async () => {
      service = await TestService.start({ applyMode });
    });
    after(async () => {
      await service.stop();
    });

    const apply = (code: string, orderId: string, value = 10_000) =>
      service.post('/v1/vouchers/apply', applyBody(code, orderId, { value, currency: 'USD' }));
    const applied = async (voucherId: string, orderId: string) =>
      (await service.sandbox.events.readStream(`voucher-${voucherId}`)).filter(
        (e) => e.type === 'VoucherApplied' && (e.data as any).orderId === orderId,
      );
    /**
     * The order's records (record, detach), all written before the response; in the two-append
     * mode, each reservation is settled (confirmed or detached) before the response too, and left
     * out here: the two modes record the same vouchers on the order.
     */
    const orderEvents = async (orderId: string) => {
      const events = await service.sandbox.events.readStream(`order-${orderId}`);
      const open = new Set<string>();
      for (const e of events) {
        const id = (e.data as any).applicationId as string;
        if (e.type === 'OrderVoucherReserved') open.add(id);
        else open.delete(id);
      }
      expect([...open], `unsettled reservations on ${orderId}`).to.deep.equal([]);
      if (applyMode === 'atomic') expect(events.map((e) => e.type)).not.to.include('OrderVoucherReserved');
      else expect(events.map((e) => e.type)).to.include('OrderVoucherReserved');
      return events
        .filter((e) => e.type !== 'OrderVoucherReserved')
        .map((e) => [
          e.type,
          (e.data as any).voucherId,
          (e.data as any).reason ?? (e.data as any).discountAmount ?? null,
        ]);
    };
    const conflict = (res: TestResponse, conflicting: string, reason: string) => {
      expect(res.status, JSON.stringify(res.body)).to.equal(409);
      expect(res.body.error.code).to.equal('STACKING_CONFLICT');
      expect(res.body.error.details).to.include({ conflicting_voucher: conflicting, conflict_reason: reason });
      expect(res.body.error.details.stackable_types).to.be.an('array');
    };
    const stackable = (
      code: string,
      base: number,
      priority: number,
      stack_rules: StackRules = {},
      base_discount_type: DiscountType = 'percentage',
    ) =>
      service.createVoucher(stackableVoucher(code, { base_discount: base, base_discount_type, priority, stack_rules }));

    let pct10: any;
    let fix500: any;
    before(async () => {
      pct10 = await service.createVoucher(percentageVoucher('PCT10'));
      fix500 = await service.createVoucher(fixedVoucher('FIX500', { value: 500 }));
    });

    it('two different non-stackable vouchers on one order at the same moment: exactly one applies (20 orders)', async () => {
      const orders = Array.from({ length: 20 }, (_, i) => `race-${i}`);
      const responses = await Promise.all(orders.flatMap((id) => [apply('PCT10', id), apply('FIX500', id)]));
      for (const [i, id] of orders.entries()) {
        const pair = [responses[2 * i]!, responses[2 * i + 1]!];
        const statuses = pair.map((r) => r.status).sort();
        expect(statuses, JSON.stringify(pair.map((r) => r.body))).to.deep.equal([201, 409]);
        const loser = pair.find((r) => r.status === 409)!;
        const winner = pair.find((r) => r.status === 201)!;
        conflict(loser, winner.body.voucher.code, 'not_stackable');
        const events = [...(await applied(pct10.id, id)), ...(await applied(fix500.id, id))];
        expect(events, id).to.have.length(1);
        expect((events[0]!.data as any).applicationId).to.equal(winner.body.id);
      }
    });

    it('a new order is not read before its first apply; an order this process holds nothing about is read before a decision counts', async () => {
      const reads = sinon.spy(service.sandbox.events, 'readStream');
      try {
        expect((await apply('PCT10', 'fresh-1')).status).to.equal(201);
        expect(reads.getCalls().map((c) => c.args[0])).to.not.include('order-fresh-1'); // taken to be new: no read
        // What this process wrote it knows: a second voucher is decided on it, without a read or a failed append.
        const appends = sinon.spy(service.sandbox.events, 'appendToStreams');
        conflict(await apply('FIX500', 'fresh-1'), 'PCT10', 'not_stackable');
        expect(appends.callCount).to.equal(0);
        appends.restore();
        expect(reads.getCalls().map((c) => c.args[0])).to.not.include('order-fresh-1');
        // As if written by another process: the order handler forgets what it knew.
        await stackable('ELSE1', 10, 1);
        await stackable('ELSE2', 15, 2);
        expect((await apply('ELSE1', 'elsewhere-1')).status).to.equal(201);
        service.sandbox.orders.clearCache();
        // The guess (a new order) fails its append; decided again on the order as read: the amount left.
        expect((await apply('ELSE2', 'elsewhere-1')).body).to.include({ discount_amount: 1350, final_amount: 7650 });
        service.sandbox.orders.clearCache();
        conflict(await apply('FIX500', 'fresh-1'), 'PCT10', 'not_stackable');
        expect(reads.getCalls().map((c) => c.args[0])).to.include('order-fresh-1');
      } finally {
        reads.restore();
      }
    });

    it('two stackable vouchers in priority order: 10% of 10000 = 1000, then 15% of the 9000 left = 1350', async () => {
      await stackable('STACK1', 10, 1);
      await stackable('STACK2', 15, 2);
      const first = await apply('STACK1', 'stack-a');
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      expect(first.body).to.include({ discount_amount: 1000, final_amount: 9000 });
      const second = await apply('STACK2', 'stack-a');
      expect(second.status, JSON.stringify(second.body)).to.equal(201);
      // final_amount: what the order comes to with both, 10000 − 1000 − 1350
      expect(second.body).to.include({ discount_amount: 1350, final_amount: 7650 });
      // each written with the voucher's VoucherApplied (atomic), or reserved before it and confirmed after it
      expect(await orderEvents('stack-a')).to.deep.equal([
        ['OrderVoucherConfirmed', first.body.voucher.id, 1000],
        ['OrderVoucherConfirmed', second.body.voucher.id, 1350],
      ]);
      const [applied1] = await applied(first.body.voucher.id, 'stack-a');
      const [order1, order2, order3] = await service.sandbox.events.readStream('order-stack-a');
      if (applyMode === 'atomic') {
        expect(order1!.position).to.equal(applied1!.position + 1); // one transaction: adjacent positions
      } else {
        // reserved before the voucher's VoucherApplied, confirmed after it
        expect([order1!.type, order2!.type]).to.deep.equal(['OrderVoucherReserved', 'OrderVoucherConfirmed']);
        expect(order1!.position).to.be.below(applied1!.position);
        expect(order2!.position).to.be.above(applied1!.position);
        expect(order3!.type).to.equal('OrderVoucherReserved');
      }
    });

    it('a stackable voucher after a non-stackable one (which it allows): on the amount left', async () => {
      await stackable('STACKFIX', 700, 0, { stackable_with: ['percentage'] }, 'fixed');
      expect((await apply('PCT10', 'mixed-1')).body.discount_amount).to.equal(1000);
      expect((await apply('STACKFIX', 'mixed-1')).body).to.include({ discount_amount: 700, final_amount: 8300 });
      // ... but not after a fixed one, and a non-stackable never joins
      expect((await apply('FIX500', 'mixed-2')).status).to.equal(201);
      conflict(await apply('STACKFIX', 'mixed-2'), 'FIX500', 'type_not_stackable');
      conflict(await apply('FIX500', 'mixed-1'), 'PCT10', 'not_stackable');
    });

    it('priority order: a lower priority number after a higher one is refused', async () => {
      expect((await apply('STACK2', 'prio-1')).status).to.equal(201);
      conflict(await apply('STACK1', 'prio-1'), 'STACK2', 'priority_order');
    });

    it('max_stack_count: the third voucher on an order that allows two is refused', async () => {
      await stackable('TWOMAX1', 5, 1, { max_stack_count: 2 });
      await stackable('TWOMAX2', 5, 2);
      await stackable('TWOMAX3', 5, 3);
      expect((await apply('TWOMAX1', 'count-1')).status).to.equal(201);
      expect((await apply('TWOMAX2', 'count-1')).status).to.equal(201);
      conflict(await apply('TWOMAX3', 'count-1'), 'TWOMAX1', 'max_stack_count');
    });

    it('max_total_discount: 20% of 10000 caps the total at 2000; once reached, a further voucher conflicts', async () => {
      await stackable('CAP20', 15, 1, { max_total_discount: 20 });
      await stackable('CAPNEXT', 15, 2);
      await stackable('CAPLAST', 500, 3, {}, 'fixed');
      expect((await apply('CAP20', 'cap-1')).body.discount_amount).to.equal(1500);
      // 15% of 8500 = 1275, capped at 2000 − 1500 = 500; final_amount is what the order comes to with both
      expect((await apply('CAPNEXT', 'cap-1')).body).to.include({ discount_amount: 500, final_amount: 8000 });
      conflict(await apply('CAPLAST', 'cap-1'), 'CAP20', 'max_total_discount_reached');
      expect(await orderEvents('cap-1')).to.have.length(2); // the refused one wrote nothing
    });

    it('validate with order.id sees the vouchers on the order', async () => {
      expect((await apply('FIX500', 'val-1')).status).to.equal(201);
      const res = await service.post('/v1/vouchers/validate', validateBody('PCT10', { id: 'val-1', value: 10_000 }));
      conflict(res, 'FIX500', 'not_stackable');
      const stacked = await service.post(
        '/v1/vouchers/validate',
        validateBody('STACK1', { id: 'val-1', value: 10_000 }),
      );
      expect(stacked.body).to.include({ discount_amount: 950 }); // 10% of 9500
      expect(stacked.body.validation_details).to.include({ stack_position: 2, prior_discount: 500 });
      // without order.id nothing is known about the order
      expect((await service.post('/v1/vouchers/validate', validateBody('PCT10', { value: 10_000 }))).status).to.equal(
        200,
      );
    });

    it('a repeat of the same apply returns the stored application and adds no order event', async () => {
      const first = await apply('PCT10', 'repeat-1');
      const again = await apply('PCT10', 'repeat-1');
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(await orderEvents('repeat-1')).to.have.length(1);
    });

    it('rollback detaches the voucher from the order: another non-stackable may follow', async () => {
      const first = await apply('PCT10', 'rb-1');
      conflict(await apply('FIX500', 'rb-1'), 'PCT10', 'not_stackable');
      expect((await service.post(`/v1/vouchers/applications/${first.body.id}/rollback`, {})).status).to.equal(200);
      expect((await apply('FIX500', 'rb-1')).status).to.equal(201);
      expect((await orderEvents('rb-1')).map((e) => e[0])).to.deep.equal([
        'OrderVoucherConfirmed',
        'OrderVoucherDetached',
        'OrderVoucherConfirmed',
      ]);
    });
  });
