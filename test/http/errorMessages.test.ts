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
