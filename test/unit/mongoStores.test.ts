import { expect } from 'chai';
import sinon from 'sinon';
import type { MongoClient } from 'mongodb';
import { openMongoStores } from '../../src/infrastructure/mongo/mongoStores.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { fakeDb, fakeSession, type FakeDb } from '../support/mongoFakes.ts';

describe('openMongoStores', function () {
  const open = async (url = 'mongodb://h:27017/shop?replicaSet=rs0') => {
    const dbs = new Map<string, FakeDb>();
    const dbOf = (name: string) => {
      if (!dbs.has(name)) dbs.set(name, fakeDb());
      return dbs.get(name)!;
    };
    dbOf('admin').db.command = sinon.stub().resolves({ ok: 1, setName: 'rs0' });
    const session = fakeSession();
    const client = {
      connect: sinon.stub().resolves(),
      close: sinon.stub().resolves(),
      db: (name: string) => dbOf(name).db,
      startSession: sinon.stub().returns(session.session),
    };
    const stores = await openMongoStores(url, new FakeClock(), {
      createClient: () => client as unknown as MongoClient,
      relaxedNamespaces: ['quotes'],
    });
    return { stores, dbOf, dbs, client, session };
  };

  it('puts each environment in its own database, analytics under a prefix, rate limits in the shared one', async function () {
    const { stores, dbOf, dbs, client } = await open();
    for (const environment of ['sandbox', 'production'] as const) {
      const { core, analytics, kv } = await stores.environment(environment);
      await core.writeBatch({ upserts: [{ collection: 'vouchers', doc: { id: environment } }] });
      await analytics.writeBatch({ checkpoint: { name: 'analytics', position: 1 } });
      await kv.put('quotes', 'q', 1, 1);
    }
    const storeFor = await stores.rateLimitStores();
    storeFor('read').init({ windowMs: 1_000 } as never);
    await storeFor('read').resetKey('k');
    expect([...dbs.keys()].sort()).to.deep.equal(['admin', 'shop', 'shop_production', 'shop_sandbox']);
    for (const name of ['shop_sandbox', 'shop_production']) {
      expect(dbOf(name).collectionNames().sort()).to.deep.equal([
        'analytics_checkpoints',
        'kv',
        'kv_owners',
        'rm_vouchers',
        'snapshot_entries',
        'snapshots',
      ]);
    }
    expect(
      dbOf('shop_sandbox').collection('rm_vouchers').bulkWrite.firstCall.args[0][0].replaceOne.replacement,
    ).to.deep.equal({ _id: 'sandbox' });
    expect(dbOf('shop_production').collection('kv').replaceOne.firstCall.args[2]).to.deep.equal({
      upsert: true,
      writeConcern: { w: 1 },
    });
    expect(dbOf('shop').collectionNames()).to.deep.equal(['rate_limits']);
    await stores.close();
    expect(client.close.calledOnce).to.equal(true);
  });
});
