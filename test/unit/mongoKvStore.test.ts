import { expect } from 'chai';
import sinon from 'sinon';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { StoreUnavailableError } from '../../src/core/storeUnavailable.ts';
import { MongoKvStore } from '../../src/infrastructure/kvStore/mongoKvStore.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { fakeCursor, fakeDb, fakeSession, type FakeDb, type FakeSession } from '../support/mongoFakes.ts';

describe('MongoKvStore (driver calls)', function () {
  let db: FakeDb;
  let session: FakeSession;
  let clock: FakeClock;
  let kv: MongoKvStore;
  const NOW = new Date('2100-01-01T00:00:00Z');
  const at = (ms: number) => new Date(NOW.getTime() + ms);

  beforeEach(async function () {
    db = fakeDb();
    session = fakeSession();
    clock = new FakeClock(NOW);
    kv = await MongoKvStore.open(db.db, () => session.session, clock, { relaxedNamespaces: ['quotes'] });
  });

  it('creates TTL indexes on expiresAt and the owner index on start', function () {
    expect(db.collection('kv').createIndex.args).to.deep.equal([
      [{ expiresAt: 1 }, { name: 'kv_ttl', expireAfterSeconds: 0 }],
      [
        { ns: 1, owner: 1, expiresAt: 1 },
        { name: 'kv_owner', partialFilterExpression: { owner: { $exists: true } } },
      ],
    ]);
    expect(db.collection('kv_owners').createIndex.args).to.deep.equal([
      [{ expiresAt: 1 }, { name: 'kv_owners_ttl', expireAfterSeconds: 0 }],
    ]);
  });

  it('get reads the live record by [namespace, key] and parses its JSON', async function () {
    db.collection('kv').findOne.resolves({ value: '{"a":[1,"x"]}' });
    expect(await kv.get('idempotency', 'k')).to.deep.equal({ a: [1, 'x'] });
    expect(db.collection('kv').findOne.firstCall.args).to.deep.equal([
      { _id: '["idempotency","k"]', expiresAt: { $gt: NOW } },
      { projection: { value: 1 } },
    ]);
    db.collection('kv').findOne.resolves(null);
    expect(await kv.get('idempotency', 'k')).to.equal(null);
  });

  it('put replaces the whole record (upsert), with w:1 for relaxed namespaces only', async function () {
    await kv.put('idempotency', 'k', { v: 1 }, at(5_000).getTime());
    await kv.put('quotes', 'q', 2, at(10).getTime());
    expect(db.collection('kv').replaceOne.args).to.deep.equal([
      [
        { _id: '["idempotency","k"]' },
        { ns: 'idempotency', key: 'k', value: '{"v":1}', expiresAt: at(5_000) },
        { upsert: true },
      ],
      [
        { _id: '["quotes","q"]' },
        { ns: 'quotes', key: 'q', value: '2', expiresAt: at(10) },
        { upsert: true, writeConcern: { w: 1 } },
      ],
    ]);
  });

  it('putIfAbsent upserts over an expired record only; a duplicate key answers false', async function () {
    expect(await kv.putIfAbsent('admin', 'password', 'x', at(1).getTime())).to.equal(true);
    expect(db.collection('kv').replaceOne.firstCall.args).to.deep.equal([
      { _id: '["admin","password"]', expiresAt: { $lte: NOW } },
      { ns: 'admin', key: 'password', value: '"x"', expiresAt: at(1) },
      { upsert: true },
    ]);
    db.collection('kv').replaceOne.rejects(new MongoServerError({ message: 'E11000 duplicate key', code: 11000 }));
    expect(await kv.putIfAbsent('admin', 'password', 'y', at(1).getTime())).to.equal(false);
    const other = new MongoServerError({ message: 'document too large', code: 10334 });
    db.collection('kv').replaceOne.rejects(other);
    expect(await kv.putIfAbsent('admin', 'password', 'y', at(1).getTime()).catch((e: unknown) => e)).to.equal(other);
  });

  it('delete, purgeExpired and ownedKeys send the expected filters', async function () {
    await kv.delete('quotes', 'q');
    expect(db.collection('kv').deleteOne.firstCall.args).to.deep.equal([
      { _id: '["quotes","q"]' },
      { writeConcern: { w: 1 } },
    ]);
    db.collection('kv').deleteMany.resolves({ deletedCount: 3 });
    expect(await kv.purgeExpired(at(7).getTime())).to.equal(3);
    expect(db.collection('kv').deleteMany.firstCall.args).to.deep.equal([{ expiresAt: { $lte: at(7) } }]);
    const cursor = fakeCursor([
      { key: 'b', expiresAt: at(1) },
      { key: 'a', expiresAt: at(2) },
    ]);
    db.collection('kv').find.returns(cursor);
    expect(await kv.ownedKeys('exports', 'key_1')).to.deep.equal([
      { key: 'b', expiresAt: at(1).getTime() },
      { key: 'a', expiresAt: at(2).getTime() },
    ]);
    expect(db.collection('kv').find.firstCall.args).to.deep.equal([
      { ns: 'exports', owner: 'key_1', expiresAt: { $gt: NOW } },
      { projection: { key: 1, expiresAt: 1 } },
    ]);
    expect(cursor.sort.firstCall.args).to.deep.equal([{ expiresAt: 1, key: 1 }]);
  });

  describe('putOwned', function () {
    const countPipeline = [
      { $match: { ns: 'exports', owner: 'key_1', expiresAt: { $gt: NOW } } },
      { $group: { _id: null, count: { $sum: 1 }, next: { $min: '$expiresAt' } } },
    ];

    it('in one transaction: writes the owner document first, then counts, then replaces the record, counting nothing after it', async function () {
      const kvc = db.collection('kv');
      kvc.aggregate.returns(fakeCursor([{ count: 1, next: at(100) }]));
      const result = await kv.putOwned('exports', 'e1', { id: 'e1' }, at(3_000).getTime(), {
        owner: 'key_1',
        limit: 2,
      });
      expect(result).to.deep.equal({ stored: true });
      expect(session.withTransaction.calledOnce).to.equal(true);
      expect(session.withTransaction.firstCall.args[1]).to.deep.equal({});
      expect(session.endSession.calledOnce).to.equal(true);
      const owners = db.collection('kv_owners');
      expect(owners.updateOne.firstCall.args).to.deep.equal([
        { _id: '["exports","key_1"]' },
        { $inc: { puts: 1 }, $max: { expiresAt: at(3_000) }, $set: { ns: 'exports', owner: 'key_1' } },
        { upsert: true, session: session.session },
      ]);
      expect(kvc.findOne.firstCall.args).to.deep.equal([
        { _id: '["exports","e1"]', expiresAt: { $gt: NOW } },
        { projection: { owner: 1 }, session: session.session },
      ]);
      expect(kvc.aggregate.firstCall.args).to.deep.equal([countPipeline, { session: session.session }]);
      expect(kvc.replaceOne.firstCall.args).to.deep.equal([
        { _id: '["exports","e1"]' },
        { ns: 'exports', key: 'e1', value: '{"id":"e1"}', expiresAt: at(3_000), owner: 'key_1' },
        { upsert: true, session: session.session },
      ]);
      sinon.assert.callOrder(owners.updateOne, kvc.findOne, kvc.aggregate, kvc.replaceOne);
      expect(kvc.aggregate.calledOnce, 'no count after the write').to.equal(true);
    });

    it('refuses at the limit without writing the record, unless it replaces a record of the same owner', async function () {
      const kvc = db.collection('kv');
      kvc.aggregate.returns(fakeCursor([{ count: 2, next: at(100) }]));
      const quota = { owner: 'key_1', limit: 2 };
      expect(await kv.putOwned('exports', 'e3', 1, at(3_000).getTime(), quota)).to.deep.equal({
        stored: false,
        count: 2,
        nextExpiresAt: at(100).getTime(),
      });
      expect(kvc.replaceOne.called).to.equal(false);
      kvc.findOne.resolves({ owner: 'key_2' });
      expect(await kv.putOwned('exports', 'e3', 1, at(3_000).getTime(), quota)).to.include({ stored: false });
      kvc.findOne.resolves({ owner: 'key_1' });
      const counts = kvc.aggregate.callCount;
      expect(await kv.putOwned('exports', 'e3', 1, at(3_000).getTime(), quota)).to.deep.equal({ stored: true });
      expect(kvc.replaceOne.calledOnce).to.equal(true);
      expect(kvc.aggregate.callCount, 'a record of the same owner replaced: nothing counted').to.equal(counts);
    });

    it('uses w:1 transactions for relaxed namespaces and ends the session when the transaction fails', async function () {
      db.collection('kv').aggregate.returns(fakeCursor([]));
      expect(await kv.putOwned('quotes', 'q', 1, at(1).getTime(), { owner: 'k', limit: 1 })).to.deep.equal({
        stored: true,
      });
      expect(session.withTransaction.firstCall.args[1]).to.deep.equal({ writeConcern: { w: 1 } });
      db.collection('kv_owners').updateOne.rejects(new MongoNetworkError('connection reset'));
      const err = await kv.putOwned('quotes', 'q', 1, at(1).getTime(), { owner: 'k', limit: 1 }).catch((e) => e);
      expect(err).to.be.instanceOf(StoreUnavailableError);
      expect(session.endSession.callCount).to.equal(2);
    });
  });

  describe('errors', function () {
    const unreachable = () => new MongoServerSelectionError('Server selection timed out after 5000 ms', {} as never);

    it('maps the driver errors of an unreachable server to StoreUnavailableError on every operation', async function () {
      const kvc = db.collection('kv');
      for (const stub of [kvc.findOne, kvc.replaceOne, kvc.deleteOne, kvc.deleteMany]) stub.rejects(unreachable());
      kvc.cursor.toArray.rejects(unreachable());
      const attempts: Array<Promise<unknown>> = [
        kv.get('a', 'b'),
        kv.put('a', 'b', 1, 1),
        kv.putIfAbsent('a', 'b', 1, 1),
        kv.delete('a', 'b'),
        kv.ownedKeys('a', 'o'),
        kv.purgeExpired(1),
      ];
      for (const attempt of attempts) {
        const err = await attempt.catch((e: unknown) => e);
        expect(err).to.be.instanceOf(StoreUnavailableError);
        expect((err as StoreUnavailableError).store).to.equal('mongodb');
        expect((err as Error).cause).to.be.instanceOf(MongoServerSelectionError);
      }
    });

    it('fails to open when index creation cannot reach the server', async function () {
      const other = fakeDb();
      other.collection('kv').createIndex.rejects(unreachable());
      const err = await MongoKvStore.open(other.db, () => session.session, clock).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(StoreUnavailableError);
    });
  });
});
