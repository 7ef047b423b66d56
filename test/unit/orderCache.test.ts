/**
 * The order handler of an embedded environment keeps at most ORDER_CACHE_SIZE order states
 * (decision 107): the least recently used one is dropped, and an order not cached is assumed new
 * or read from its stream again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { ORDER_CACHE_SIZE } from '../../src/application/orders.ts';
import { openEmbedded, type Embedded } from '../../src/composition.ts';
import { orderStream } from '../../src/domain/order/events.ts';
import { orderVoucherConfirmed } from '../fixtures/events.ts';
import { FakeClock } from '../support/fakeClock.ts';

describe('the order handler cache', function () {
  this.timeout(20_000);
  let dataDir: string;
  let embedded: Embedded;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-order-cache-'));
    embedded = await openEmbedded({
      dataDir,
      clock: new FakeClock(),
      logger: pino({ level: 'silent' }),
      apiKeys: [],
      projectors: 'inline',
    });
  });

  after(async () => {
    await embedded.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('holds the last ORDER_CACHE_SIZE orders written and drops the least recently used', async () => {
    const orders = embedded.environments.sandbox.orders;
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
