/**
 * HTTP: the error messages a newcomer meets say what to send, in the terms the reference uses.
 */
import { expect } from 'chai';
import { TestService } from '../support/harness.ts';

describe('HTTP error messages a user stumbles on', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    await service.stop();
  });

  it('a float order.value says the amount is in cents', async () => {
    const res = await service.post('/v1/vouchers/validate', { code: 'X', order: { value: 19.99 } });
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.deep.equal([
      { field: 'order.value', message: 'must be a whole number of cents (an integer: 19.99 is sent as 1999)' },
    ]);
  });

  it('"usd" is explained as an upper-case ISO 4217 code, without the regular expression', async () => {
    const res = await service.post('/v1/vouchers/validate', { code: 'X', order: { value: 100, currency: 'usd' } });
    expect(res.status).to.equal(400);
    expect(res.body.error.message).not.to.include('^[A-Z]');
    expect(res.body.error.details).to.deep.equal([
      { field: 'order.currency', message: 'must be an upper-case ISO 4217 currency code such as USD' },
    ]);
  });

  it('a code with other characters is explained in words', async () => {
    const res = await service.post('/v1/vouchers', { code: 'SUMMER 20', type: 'fixed', value: 100 });
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.deep.equal([
      { field: 'code', message: 'must be 1 to 64 characters of A-Z a-z 0-9 _ -' },
    ]);
  });

  it('a non-stackable voucher refused on an order that has one: stackable_types is empty', async () => {
    await service.createVoucher({ code: 'MSG_P10', type: 'percentage', value: 10 });
    await service.createVoucher({ code: 'MSG_F5', type: 'fixed', value: 500 });
    const order = { value: 10_000 };
    expect((await service.post('/v1/vouchers/apply', { code: 'MSG_P10', order_id: 'msg-o1', order })).status).to.equal(
      201,
    );
    const res = await service.post('/v1/vouchers/apply', { code: 'MSG_F5', order_id: 'msg-o1', order });
    expect(res.status).to.equal(409);
    expect(res.body.error.details).to.include({ conflict_reason: 'not_stackable' });
    expect(res.body.error.details.stackable_types).to.deep.equal([]);
  });

  it('one validation rule (two checks) unmet: the message counts the one rule', async () => {
    await service.createVoucher({
      code: 'MSG_RULE',
      type: 'fixed',
      value: 100,
      validation_rules: [{ type: 'order_value', operator: 'gte', value: 50_000, currency: 'USD' }],
    });
    const res = await service.post('/v1/vouchers/validate', {
      code: 'MSG_RULE',
      order: { value: 10_000, currency: 'USD' },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('CONDITION_NOT_MET');
    expect(res.body.error.message).to.equal("The voucher's validation rule is not met");
    // the details still count checks, as documented
    expect(res.body.error.details).to.include({ required_conditions: 2, met_conditions: 1 });
  });

  it('two rules, one unmet: "1 of the voucher\'s 2 validation rules is not met"', async () => {
    await service.createVoucher({
      code: 'MSG_RULES2',
      type: 'fixed',
      value: 100,
      validation_rules: [
        { type: 'order_value', operator: 'gte', value: 50_000, currency: 'USD' },
        { type: 'customer', rules: [{ segment: 'vip' }] },
      ],
    });
    const res = await service.post('/v1/vouchers/validate', {
      code: 'MSG_RULES2',
      order: { value: 60_000, currency: 'USD' },
      customer: { segment: 'new' },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error.message).to.equal("1 of the voucher's 2 validation rules is not met");
  });

  it('a conditional voucher with one of its two conditions unmet: "1 of the voucher\'s 2 conditions is not met"', async () => {
    await service.createVoucher({
      code: 'MSG_COND',
      type: 'conditional',
      config: {
        conditions: [
          { type: 'order_value', operator: 'gte', value: 5000 },
          { type: 'customer_segment', operator: 'eq', value: 'vip' },
        ],
        discount: 10,
        discount_type: 'percentage',
      },
    });
    const res = await service.post('/v1/vouchers/validate', {
      code: 'MSG_COND',
      order: { value: 6000 },
      customer: { segment: 'new' },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error.message).to.equal("1 of the voucher's 2 conditions is not met");
  });

  it('bogo with a value and no config: both problems, config required', async () => {
    const res = await service.post('/v1/vouchers', { code: 'MSG_BOGO', type: 'bogo', value: 10 });
    expect(res.status).to.equal(400);
    expect(res.body.error.details).to.deep.equal([
      { field: 'value', message: 'is not allowed for bogo vouchers: their discount is in config' },
      { field: 'config', message: 'is required for bogo vouchers: it holds their discount' },
    ]);
  });

  it('a percentage voucher with a config and no value: both problems', async () => {
    const res = await service.post('/v1/vouchers', {
      code: 'MSG_PCT',
      type: 'percentage',
      config: { buy_quantity: 1, get_quantity: 1 },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal(['value', 'config']);
  });

  describe('created_after / created_before take a date, as the analytics endpoints do', () => {
    const codes = (res: { body: { data: Array<{ code: string }> } }) => res.body.data.map((v) => v.code).sort();

    before(async () => {
      // created at 2026-11-22T23:59:59Z, 2026-11-23T00:00:00Z and 2026-11-23T18:00:00Z
      service.clock.set(new Date('2026-11-22T23:59:59Z'));
      await service.createVoucher({ code: 'DAY_BEFORE', type: 'fixed', value: 100 });
      service.clock.set(new Date('2026-11-23T00:00:00Z'));
      await service.createVoucher({ code: 'DAY_MIDNIGHT', type: 'fixed', value: 100 });
      service.clock.set(new Date('2026-11-23T18:00:00Z'));
      await service.createVoucher({ code: 'DAY_EVENING', type: 'fixed', value: 100 });
    });

    it('created_after=2026-11-23: the whole day, from its first second', async () => {
      const res = await service.get('/v1/vouchers?created_after=2026-11-23&limit=100');
      expect(res.status).to.equal(200);
      expect(codes(res)).to.deep.equal(['DAY_EVENING', 'DAY_MIDNIGHT']);
    });

    it('created_before=2026-11-23: before that day began', async () => {
      const res = await service.get('/v1/vouchers?created_before=2026-11-23&created_after=2026-11-22&limit=100');
      expect(res.status).to.equal(200);
      expect(codes(res)).to.deep.equal(['DAY_BEFORE']);
    });

    it('a timestamp stays exclusive', async () => {
      const res = await service.get('/v1/vouchers?created_after=2026-11-23T00:00:00Z&limit=100');
      expect(codes(res)).to.deep.equal(['DAY_EVENING']);
    });
  });
});
