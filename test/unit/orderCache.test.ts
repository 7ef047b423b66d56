/**
 * The order handler of an embedded environment keeps at most ORDER_CACHE_SIZE order states
 * (decision 107): the least recently used one is dropped, and an order not cached is assumed new
 * or read from its stream again.
 */
import { expect } from 'chai';
import { ORDER_CACHE_SIZE } from '../../src/application/orders.ts';
import { orderStream } from '../../src/domain/order/events.ts';
import { orderVoucherConfirmed } from '../fixtures/events.ts';
import { TestService } from '../support/harness.ts';

describe('the order handler cache', function () {
  this.timeout(20_000);
  let service: TestService;
  before(async () => {
    service = await TestService.start();
  });
  after(() => service.stop());

  it('holds the last ORDER_CACHE_SIZE orders written and drops the least recently used', async () => {
    const orders = service.sandbox.orders;
    const ids = Array.from({ length: ORDER_CACHE_SIZE + 1 }, (_, i) => `ord_cache_${i}`);
    for (const orderId of ids) {
      orders.learn(orderStream(orderId), -1, [orderVoucherConfirmed({ orderId })], 0);
    }
    // the first order learnt is the one dropped; the second and the last are still cached
    expect((await orders.peekOrAssumeNew(orderStream(ids[0]!))).assumed).to.equal(true);
    expect((await orders.peekOrAssumeNew(orderStream(ids[1]!))).assumed).to.equal(false);
    expect((await orders.peekOrAssumeNew(orderStream(ids.at(-1)!))).assumed).to.equal(false);
  });
});
