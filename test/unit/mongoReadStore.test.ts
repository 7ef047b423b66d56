import { expect } from 'chai';
import sinon from 'sinon';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import type { Document, Filter } from '../../src/core/readStore.ts';
import { StoreUnavailableError } from '../../src/core/storeUnavailable.ts';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { fakeCursor, fakeDb, fakeSession, type FakeDb, type FakeSession } from '../support/mongoFakes.ts';

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(Error);
    return err as Error;
  }
  return expect.fail('expected the promise to reject');
}

describe('MongoReadStore (driver calls)', function () {
  let db: FakeDb;
  let session: FakeSession;
  let startSession: sinon.SinonStub;
  let store: MongoReadStore;

  beforeEach(function () {
    db = fakeDb();
    session = fakeSession();
    startSession = sinon.stub().returns(session.session);
    store = MongoReadStore.open(db.db, startSession);
  });

  describe('filters pass through, id as _id', function () {
    const cases: Array<[Filter, Record<string, unknown>]> = [
      [{}, {}],
      [
        { status: 'active', n: 10, flag: true, opt: null },
        { status: 'active', n: 10, flag: true, opt: null },
      ],
      [{ 'meta.tier': { $eq: 'gold' } }, { 'meta.tier': { $eq: 'gold' } }],
      [{ n: { $gt: 1, $lte: 10 } }, { n: { $gt: 1, $lte: 10 } }],
      [{ at: { $gte: '2024-01-01', $lt: '2024-07-01' } }, { at: { $gte: '2024-01-01', $lt: '2024-07-01' } }],
      [{ status: { $in: [null, 'a', 1, false], $ne: 'x' } }, { status: { $in: [null, 'a', 1, false], $ne: 'x' } }],
      [{ id: 'c' }, { _id: 'c' }],
      [{ id: { $in: ['a', 'b'] } }, { _id: { $in: ['a', 'b'] } }],
      [
        { status: 'active', $or: [{ id: { $gt: 'd' } }, { $or: [{ n: -3 }] }] },
        { status: 'active', $or: [{ _id: { $gt: 'd' } }, { $or: [{ n: -3 }] }] },
      ],
    ];
    for (const [filter, expected] of cases) {
      it(`${JSON.stringify(filter)} → ${JSON.stringify(expected)} in find and count`, async function () {
        await store.find('vouchers', filter);
        await store.count('vouchers', filter);
        const c = db.collection('rm_vouchers');
        expect(c.find.firstCall.args).to.deep.equal([expected]);
        expect(c.countDocuments.firstCall.args).to.deep.equal([expected]);
      });
    }

    const refused: Array<[string, unknown]> = [
      ['$where', { $where: 'sleep(1000)' }],
      ['$regex', { a: { $regex: '^x' } }],
      ['$nin', { a: { $nin: [1] } }],
      ['$exists', { a: { $exists: true } }],
      ['$expr', { $expr: { $eq: ['$a', 1] } }],
      ['top-level $and', { $and: [{ a: 1 }] }],
      ['empty $or', { $or: [] }],
      ['an operator object as equality', { a: { b: 1 } }],
      ['an object in $in', { a: { $in: [{ $gt: 1 }] } }],
      ['an array equality', { a: [1, 2] }],
      ['a Date', { a: new Date(0) }],
      ['NaN', { a: { $gt: Number.NaN } }],
      ['Infinity', { a: Number.POSITIVE_INFINITY }],
      ['$gt boolean', { a: { $gt: true } }],
      ['$in not an array', { a: { $in: 'x' } }],
      ['undefined', { a: undefined }],
      ['an empty operator object', { a: {} }],
      ['a $-prefixed field', { $a: 1 }],
      ['a bad field path', { 'a..b': 1 }],
      ['a bad field path inside $or', { $or: [{ 'a b': 1 }] }],
    ];
    for (const [what, filter] of refused) {
      it(`refuses ${what} before any driver call`, async function () {
        await rejection(store.find('vouchers', filter as Filter));
        await rejection(store.count('vouchers', filter as Filter));
        expect(db.collection('rm_vouchers').find.called).to.equal(false);
        expect(db.collection('rm_vouchers').countDocuments.called).to.equal(false);
      });
    }

    it('refuses bad collection names everywhere', async function () {
      for (const bad of ['Users', 'a-b', '', 'system.users', '$cmd']) {
        for (const attempt of [
          store.get(bad, 'x'),
          store.getMany(bad, ['x']),
          store.find(bad),
          store.count(bad),
          store.ensureIndex(bad, ['a']),
          store.writeBatch({ upserts: [{ collection: bad, doc: { id: 'x' } }] }),
          store.reset([bad], 'cp'),
        ]) {
          expect((await rejection(attempt)).message).to.match(/invalid collection name/);
        }
      }
      expect(db.collectionNames()).to.deep.equal([]);
    });
  });

  describe('reads', function () {
    it('find sorts with an _id tiebreak, skips and limits, and gives documents back with id', async function () {
      const c = db.collection('rm_vouchers');
      c.cursor.toArray.resolves([{ _id: 'a', n: 1, meta: { x: 1 } }]);
      const found = await store.find('vouchers', { n: 1 }, { sort: [['meta.x', -1]], skip: 5, limit: 2 });
      expect(found).to.deep.equal([{ id: 'a', n: 1, meta: { x: 1 } }]);
      expect(c.cursor.sort.firstCall.args).to.deep.equal([
        [
          ['meta.x', -1],
          ['_id', 1],
        ],
      ]);
      expect(c.cursor.skip.firstCall.args).to.deep.equal([5]);
      expect(c.cursor.limit.firstCall.args).to.deep.equal([2]);
      await store.find('vouchers', {}, { sort: [['id', -1]] });
      expect(c.cursor.sort.secondCall.args).to.deep.equal([[['_id', -1]]]);
    });

    it('limit 0 answers nothing without asking the server (MongoDB reads 0 as no limit)', async function () {
      expect(await store.find('vouchers', {}, { limit: 0 })).to.deep.equal([]);
      expect(db.collection('rm_vouchers').find.called).to.equal(false);
    });

    it('refuses bad sorts, skips and limits', async function () {
      await rejection(store.find('v', {}, { sort: [['a', 0 as 1]] }));
      await rejection(store.find('v', {}, { sort: [['$a', 1]] }));
      await rejection(store.find('v', {}, { limit: -1 }));
      await rejection(store.find('v', {}, { skip: 1.5 }));
      expect(db.collection('rm_v').find.called).to.equal(false);
    });

    it('get and getMany read by _id; getMany asks once for the distinct ids and none for no ids', async function () {
      const c = db.collection('rm_vouchers');
      c.findOne.resolves({ _id: 'v1', code: 'X' });
      expect(await store.get('vouchers', 'v1')).to.deep.equal({ id: 'v1', code: 'X' });
      expect(c.findOne.firstCall.args).to.deep.equal([{ _id: 'v1' }]);
      c.findOne.resolves(null);
      expect(await store.get('vouchers', 'nope')).to.equal(null);
      c.cursor.toArray.resolves([
        { _id: 'a', v: 1 },
        { _id: 'c', v: 3 },
      ]);
      const found = await store.getMany('vouchers', ['c', 'missing', 'a', 'c']);
      expect([...found.entries()]).to.deep.equal([
        ['a', { id: 'a', v: 1 }],
        ['c', { id: 'c', v: 3 }],
      ]);
      expect(c.find.firstCall.args).to.deep.equal([{ _id: { $in: ['c', 'missing', 'a'] } }]);
      expect((await store.getMany('vouchers', [])).size).to.equal(0);
      expect(c.find.callCount).to.equal(1);
    });

    it('getCheckpoint reads {_id: name}; 0 when absent', async function () {
      const cps = db.collection('checkpoints');
      expect(await store.getCheckpoint('core')).to.equal(0);
      cps.findOne.resolves({ _id: 'core', position: 1_234_567_890_123 });
      expect(await store.getCheckpoint('core')).to.equal(1_234_567_890_123);
      expect(cps.findOne.firstCall.args).to.deep.equal([{ _id: 'core' }]);
    });
  });

  describe('writeBatch', function () {
    it('replaces whole documents, then deletes, then sets the checkpoint, all in one transaction', async function () {
      await store.writeBatch({
        upserts: [
          { collection: 'vouchers', doc: { id: 'v1', code: 'A', skip: undefined, at: new Date(0) as unknown } },
          { collection: 'orders', doc: { id: 'o1', total: 100 } },
          { collection: 'vouchers', doc: { id: 'v1', code: 'B' } },
        ],
        deletes: [{ collection: 'vouchers', id: 'v0' }],
        checkpoint: { name: 'core', position: 42 },
      });
      expect(startSession.calledOnce).to.equal(true);
      expect(session.withTransaction.calledOnce).to.equal(true);
      expect(session.endSession.calledOnce).to.equal(true);
      const vouchers = db.collection('rm_vouchers').bulkWrite;
      expect(vouchers.firstCall.args).to.deep.equal([
        [
          {
            replaceOne: {
              filter: { _id: 'v1' },
              replacement: { _id: 'v1', code: 'A', at: '1970-01-01T00:00:00.000Z' },
              upsert: true,
            },
          },
          { replaceOne: { filter: { _id: 'v1' }, replacement: { _id: 'v1', code: 'B' }, upsert: true } },
          { deleteOne: { filter: { _id: 'v0' } } },
        ],
        { session: session.session, ordered: true },
      ]);
      expect(db.collection('rm_orders').bulkWrite.firstCall.args).to.deep.equal([
        [{ replaceOne: { filter: { _id: 'o1' }, replacement: { _id: 'o1', total: 100 }, upsert: true } }],
        { session: session.session, ordered: true },
      ]);
      const checkpoint = db.collection('checkpoints').updateOne;
      expect(checkpoint.firstCall.args).to.deep.equal([
        { _id: 'core' },
        { $set: { position: 42 } },
        { upsert: true, session: session.session },
      ]);
      sinon.assert.callOrder(vouchers, db.collection('rm_orders').bulkWrite, checkpoint);
    });

    it('a checkpoint alone is still a transaction; an empty batch makes no call', async function () {
      await store.writeBatch({});
      await store.writeBatch({ upserts: [], deletes: [] });
      expect(startSession.called).to.equal(false);
      await store.writeBatch({ checkpoint: { name: 'cp', position: 0 } });
      expect(session.withTransaction.calledOnce).to.equal(true);
      expect(db.collection('checkpoints').updateOne.calledOnce).to.equal(true);
    });

    const invalid: Array<[string, Parameters<MongoReadStore['writeBatch']>[0]]> = [
      ['a document without an id', { upserts: [{ collection: 'v', doc: { v: 1 } as unknown as Document }] }],
      ['a numeric id', { upserts: [{ collection: 'v', doc: { id: 7 } as unknown as Document }] }],
      ['an _id member', { upserts: [{ collection: 'v', doc: { id: 'a', _id: 'b' } }] }],
      ['an empty delete id', { deletes: [{ collection: 'v', id: '' }] }],
      ['a negative checkpoint', { checkpoint: { name: 'cp', position: -1 } }],
      ['a fractional checkpoint', { checkpoint: { name: 'cp', position: 1.5 } }],
    ];
    for (const [what, batch] of invalid) {
      it(`with ${what}: refused before any session starts`, async function () {
        await rejection(
          store.writeBatch({ upserts: [{ collection: 'v', doc: { id: 'ok' } }], ...batch } as typeof batch),
        );
        expect(startSession.called).to.equal(false);
        expect(db.collection('rm_v').bulkWrite.called).to.equal(false);
      });
    }

    it('a circular document is refused before any session starts', async function () {
      const circular: Record<string, unknown> = { id: 'loop' };
      circular.self = circular;
      await rejection(store.writeBatch({ upserts: [{ collection: 'v', doc: circular as Document }] }));
      expect(startSession.called).to.equal(false);
    });

    it('a failing write inside the transaction rejects with the driver error and ends the session', async function () {
      const failure = new MongoServerError({ message: 'document too large', code: 10334 });
      db.collection('rm_v').bulkWrite.rejects(failure);
      const err = await rejection(
        store.writeBatch({ upserts: [{ collection: 'v', doc: { id: 'a' } }], checkpoint: { name: 'cp', position: 1 } }),
      );
      expect(err).to.equal(failure);
      expect(db.collection('checkpoints').updateOne.called).to.equal(false);
      expect(session.endSession.calledOnce).to.equal(true);
    });
  });

  describe('indexes and reset', function () {
    it('ensureIndex creates an index on the fields in order, id as _id; id alone needs none', async function () {
      await store.ensureIndex('vouchers', ['status', 'conditions.valid_until', 'id']);
      await store.ensureIndex('vouchers', ['id']);
      expect(db.collection('rm_vouchers').createIndex.args).to.deep.equal([
        [{ status: 1, 'conditions.valid_until': 1, _id: 1 }],
      ]);
      expect(Object.keys(db.collection('rm_vouchers').createIndex.firstCall.args[0])).to.deep.equal([
        'status',
        'conditions.valid_until',
        '_id',
      ]);
      await rejection(store.ensureIndex('vouchers', []));
      await rejection(store.ensureIndex('vouchers', ['ok', 'a-b']));
    });

    it('reset deletes every document of the collections and the checkpoint in one transaction', async function () {
      await store.reset(['vouchers', 'orders'], 'core');
      expect(session.withTransaction.calledOnce).to.equal(true);
      expect(db.collection('rm_vouchers').deleteMany.firstCall.args).to.deep.equal([{}, { session: session.session }]);
      expect(db.collection('rm_orders').deleteMany.firstCall.args).to.deep.equal([{}, { session: session.session }]);
      expect(db.collection('checkpoints').deleteOne.firstCall.args).to.deep.equal([
        { _id: 'core' },
        { session: session.session },
      ]);
    });

    it('a prefix puts every collection, checkpoints included, under it', async function () {
      const prefixed = MongoReadStore.open(db.db, startSession, { prefix: 'analytics_' });
      await prefixed.writeBatch({
        upserts: [{ collection: 'daily', doc: { id: 'd' } }],
        checkpoint: { name: 'analytics', position: 3 },
      });
      await prefixed.ensureIndex('daily', ['day']);
      expect(db.collectionNames().sort()).to.deep.equal(['analytics_checkpoints', 'analytics_rm_daily']);
      expect(() => MongoReadStore.open(db.db, startSession, { prefix: 'Bad-' })).to.throw(/invalid collection prefix/);
    });
  });

  describe('errors', function () {
    it('maps an unreachable server to StoreUnavailableError on every operation', async function () {
      const c = db.collection('rm_v');
      const down = () => new MongoServerSelectionError('Server selection timed out after 5000 ms', {} as never);
      c.findOne.rejects(down());
      c.countDocuments.rejects(down());
      c.createIndex.rejects(down());
      c.cursor.toArray.rejects(down());
      db.collection('checkpoints').findOne.rejects(down());
      const lost = new MongoNetworkError('connection 3 to 10.0.0.9:27017 closed');
      c.bulkWrite.rejects(lost);
      c.deleteMany.rejects(lost);
      for (const attempt of [
        store.get('v', 'a'),
        store.getMany('v', ['a', 'b']),
        store.find('v'),
        store.count('v'),
        store.ensureIndex('v', ['a']),
        store.getCheckpoint('cp'),
        store.writeBatch({ upserts: [{ collection: 'v', doc: { id: 'a' } }] }),
        store.reset(['v'], 'cp'),
      ]) {
        const err = await rejection(attempt);
        expect(err).to.be.instanceOf(StoreUnavailableError);
        expect(err).to.include({ store: 'mongodb' });
      }
      expect(session.endSession.callCount).to.equal(2);
    });

    it('a session that cannot start is StoreUnavailableError too', async function () {
      startSession.throws(new MongoServerSelectionError('no server', {} as never));
      const err = await rejection(store.writeBatch({ checkpoint: { name: 'cp', position: 1 } }));
      expect(err).to.be.instanceOf(StoreUnavailableError);
    });
  });

  it('reads cursor rows as given (no conversion of nested ids)', async function () {
    db.collection('rm_v').find.returns(fakeCursor([{ _id: 'a', nested: { id: 'x', _id: 'y' } }]));
    expect(await store.find('v')).to.deep.equal([{ id: 'a', nested: { id: 'x', _id: 'y' } }]);
  });
});
