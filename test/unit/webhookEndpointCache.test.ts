/**
 * The endpoint copies an attempt reads, kept in memory where the publisher beside the dispatcher
 * writes them all through the same DeliveryStore: read once, dropped at each write of a copy.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { DeliveryStore, ENDPOINTS, type EndpointDoc } from '../../src/application/webhooks/deliveryStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { endpointCopy } from '../fixtures/webhooks.ts';

const copy = (url: string) => endpointCopy('we_a', url) as unknown as EndpointDoc;

describe('webhook endpoint copies kept in memory', () => {
  let deliveries: DeliveryStore;
  beforeEach(async () => {
    deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(':memory:')));
    await deliveries.start();
    await deliveries.write({ upserts: [{ collection: ENDPOINTS, doc: copy('http://127.0.0.1:9/one') }] });
  });
  afterEach(async () => {
    sinon.restore();
    await deliveries.close();
  });

  it('reads each copy once, and again after this store wrote it', async () => {
    deliveries.cacheEndpoints();
    const reads = sinon.spy(deliveries.store, 'get');
    expect((await deliveries.endpoint('we_a'))?.url).to.equal('http://127.0.0.1:9/one');
    expect((await deliveries.endpoint('we_a'))?.url).to.equal('http://127.0.0.1:9/one');
    expect(await deliveries.endpoint('we_missing')).to.equal(null);
    expect(await deliveries.endpoint('we_missing')).to.equal(null);
    expect(reads.callCount).to.equal(2);

    await deliveries.write({ upserts: [{ collection: ENDPOINTS, doc: copy('http://127.0.0.1:9/two') }] });
    expect((await deliveries.endpoint('we_a'))?.url).to.equal('http://127.0.0.1:9/two');
    expect(reads.callCount).to.equal(3);
    // a write without endpoint copies keeps the cache
    await deliveries.write({ checkpoint: { name: 'x', position: 1 } });
    await deliveries.endpoint('we_a');
    expect(reads.callCount).to.equal(3);
  });

  it('does not keep a copy read while a write of it was under way', async () => {
    deliveries.cacheEndpoints();
    const stored = deliveries.store;
    const get = stored.get.bind(stored);
    let writeDuringRead: (() => Promise<void>) | undefined;
    sinon.stub(stored, 'get').callsFake(async (collection: string, id: string) => {
      const before = await get(collection, id); // the old copy
      await writeDuringRead?.(); // the copy changes before the read returns
      writeDuringRead = undefined;
      return before;
    });
    writeDuringRead = () =>
      deliveries.write({ upserts: [{ collection: ENDPOINTS, doc: copy('http://127.0.0.1:9/two') }] });
    expect((await deliveries.endpoint('we_a'))?.url).to.equal('http://127.0.0.1:9/one');
    expect((await deliveries.endpoint('we_a'))?.url).to.equal('http://127.0.0.1:9/two');
  });

  it('reads the store at every call without cacheEndpoints', async () => {
    const reads = sinon.spy(deliveries.store, 'get');
    await deliveries.endpoint('we_a');
    await deliveries.endpoint('we_a');
    expect(reads.callCount).to.equal(2);
  });
});
