import { expect } from 'chai';
import { pino } from 'pino';
import express from 'express';
import { MongoNetworkError, MongoServerSelectionError, type Db } from 'mongodb';
import type { Options } from 'express-rate-limit';
import { StoreUnavailableError } from '../../src/core/storeUnavailable.ts';
import { mongoRateLimitStores } from '../../src/infrastructure/rateLimit/mongoRateLimitStore.ts';
import { createRateLimiter } from '../../src/http/rateLimits.ts';
import { rateLimitStoreContract } from '../contract/rateLimitStoreContract.ts';
import { fakeDb, type FakeDb } from '../support/mongoFakes.ts';

const NOW = Date.parse('2100-01-01T00:00:00Z');
const WINDOW = 60_000;

describe('MongoRateLimitStore (driver calls)', function () {
  let db: FakeDb;

  beforeEach(function () {
    db = fakeDb();
  });

  const open = async (group = 'read') => {
    const store = (await mongoRateLimitStores(db.db, () => NOW))(group);
    store.init({ windowMs: WINDOW } as Options);
    return store;
  };

  it('creates the TTL index on resetTime and the group index', async function () {
    await open();
    expect(db.collection('rate_limits').createIndex.args).to.deep.equal([
      [{ resetTime: 1 }, { name: 'rate_limits_ttl', expireAfterSeconds: 0 }],
      [{ group: 1 }, { name: 'rate_limits_group' }],
    ]);
  });

  it('shares counters (localKeys false) and keys each group apart (prefix)', async function () {
    const store = await open('apply');
    expect(store.localKeys).to.equal(false);
    expect(store.prefix).to.equal('apply');
  });

  it('increment is one atomic findOneAndUpdate: a pipeline that counts or starts a new window, upserting', async function () {
    const counters = db.collection('rate_limits');
    counters.findOneAndUpdate.resolves({ _id: 'x', totalHits: 3, resetTime: new Date(NOW + 5) });
    const store = await open();
    expect(await store.increment('key_1')).to.deep.equal({ totalHits: 3, resetTime: new Date(NOW + 5) });
    const live = { $gt: ['$resetTime', new Date(NOW)] };
    expect(counters.findOneAndUpdate.firstCall.args).to.deep.equal([
      { _id: '["read","key_1"]' },
      [
        {
          $set: {
            group: { $literal: 'read' },
            totalHits: { $cond: [live, { $add: ['$totalHits', 1] }, 1] },
            resetTime: { $cond: [live, '$resetTime', new Date(NOW + WINDOW)] },
          },
        },
      ],
      { upsert: true, returnDocument: 'after' },
    ]);
  });

  it('decrement, resetKey and resetAll send the expected updates and filters', async function () {
    const counters = db.collection('rate_limits');
    const store = await open();
    await store.decrement('key_1');
    expect(counters.updateOne.firstCall.args).to.deep.equal([
      { _id: '["read","key_1"]' },
      [
        {
          $set: {
            group: { $literal: 'read' },
            totalHits: { $max: [0, { $subtract: [{ $ifNull: ['$totalHits', 0] }, 1] }] },
            resetTime: { $ifNull: ['$resetTime', new Date(NOW + WINDOW)] },
          },
        },
      ],
      { upsert: true },
    ]);
    await store.resetKey('key_1');
    expect(counters.deleteOne.firstCall.args).to.deep.equal([{ _id: '["read","key_1"]' }]);
    await store.resetAll();
    expect(counters.deleteMany.firstCall.args).to.deep.equal([{ group: 'read' }]);
  });

  it('get answers a live window only', async function () {
    const counters = db.collection('rate_limits');
    const store = await open();
    counters.findOne.resolves({ _id: 'x', totalHits: 2, resetTime: new Date(NOW + 1) });
    expect(await store.get('key_1')).to.deep.equal({ totalHits: 2, resetTime: new Date(NOW + 1) });
    expect(counters.findOne.firstCall.args).to.deep.equal([{ _id: '["read","key_1"]' }]);
    counters.findOne.resolves({ _id: 'x', totalHits: 2, resetTime: new Date(NOW) });
    expect(await store.get('key_1')).to.equal(undefined);
    counters.findOne.resolves(null);
    expect(await store.get('key_1')).to.equal(undefined);
  });

  it('maps an unreachable server to StoreUnavailableError on every operation', async function () {
    const counters = db.collection('rate_limits');
    const store = await open();
    const down = new MongoServerSelectionError('Server selection timed out', {} as never);
    for (const stub of [counters.findOne, counters.findOneAndUpdate, counters.updateOne, counters.deleteOne])
      stub.rejects(down);
    counters.deleteMany.rejects(new MongoNetworkError('closed'));
    for (const attempt of [
      store.get('k'),
      store.increment('k'),
      store.decrement('k'),
      store.resetKey('k'),
      store.resetAll(),
    ]) {
      expect(await attempt.catch((e: unknown) => e)).to.be.instanceOf(StoreUnavailableError);
    }
    const other = fakeDb();
    other.collection('rate_limits').createIndex.rejects(down);
    expect(await mongoRateLimitStores(other.db).catch((e: unknown) => e)).to.be.instanceOf(StoreUnavailableError);
  });

  it("plugs into the service's limiter: its counts decide the 429, and a store that is down lets requests through", async function () {
    const counters = db.collection('rate_limits');
    const storeFor = await mongoRateLimitStores(db.db);
    const limiter = createRateLimiter(
      { enabled: true, windowMs: WINDOW, limits: { read: 2 } as never },
      storeFor,
      pino({ level: 'silent' }),
    );
    const app = express();
    app.use((req, _res, next) => {
      (req as unknown as { apiKey: { id: string } }).apiKey = { id: 'key_1' };
      next();
    });
    app.get('/', limiter('read'), (_req, res) => void res.json({ ok: true }));
    app.use((err: { code?: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(err.code === 'RATE_LIMIT_EXCEEDED' ? 429 : 500).json({ code: err.code });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    try {
      const resetTime = new Date(Date.now() + WINDOW);
      counters.findOneAndUpdate.resolves({ totalHits: 2, resetTime });
      const ok = await fetch(url);
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('x-ratelimit-remaining')).to.equal('0');
      counters.findOneAndUpdate.resolves({ totalHits: 3, resetTime });
      expect((await fetch(url)).status).to.equal(429);
      expect(counters.findOneAndUpdate.firstCall.args[0]).to.deep.equal({ _id: '["read","key_1"]' });
      counters.findOneAndUpdate.rejects(new MongoServerSelectionError('down', {} as never));
      expect((await fetch(url)).status).to.equal(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

/**
 * The store's update pipelines run against an in-memory collection that evaluates the few
 * aggregation operators they use with MongoDB's rules (a missing field orders before any
 * value), so the MemoryStore contract checks the pipelines' logic without a server.
 */
describe('MongoRateLimitStore pipelines, evaluated in memory', function () {
  type Doc = Record<string, unknown>;
  const order = (v: unknown): number => (v === undefined || v === null ? 0 : typeof v === 'number' ? 1 : 2);
  const cmp = (a: unknown, b: unknown): number => {
    const [ta, tb] = [order(a), order(b)];
    if (ta !== tb) return ta - tb;
    const [x, y] = [a instanceof Date ? a.getTime() : a, b instanceof Date ? b.getTime() : b] as number[];
    return ta === 0 ? 0 : x - y;
  };
  const evaluate = (expr: unknown, doc: Doc): unknown => {
    if (typeof expr === 'string' && expr.startsWith('$')) return doc[expr.slice(1)];
    if (expr === null || typeof expr !== 'object' || expr instanceof Date) return expr;
    const [[op, raw]] = Object.entries(expr as Doc);
    if (op === '$literal') return raw;
    const args = (raw as unknown[]).map((a) => evaluate(a, doc));
    switch (op) {
      case '$gt':
        return cmp(args[0], args[1]) > 0;
      case '$cond':
        return args[0] ? args[1] : args[2];
      case '$add':
        return (args[0] as number) + (args[1] as number);
      case '$subtract':
        return (args[0] as number) - (args[1] as number);
      case '$max':
        return Math.max(...(args as number[]));
      case '$ifNull':
        return args[0] ?? args[1];
      default:
        throw new Error(`operator ${op} is not evaluated here`);
    }
  };
  const memoryCollection = () => {
    const docs = new Map<string, Doc>();
    const update = (id: string, pipeline: Array<{ $set: Doc }>) => {
      let doc: Doc = docs.get(id) ?? { _id: id };
      for (const stage of pipeline) {
        const next = { ...doc };
        for (const [field, expr] of Object.entries(stage.$set)) next[field] = evaluate(expr, doc);
        doc = next;
      }
      docs.set(id, doc);
      return doc;
    };
    return {
      createIndex: async () => 'ok',
      findOne: async (f: { _id: string }) => docs.get(f._id) ?? null,
      findOneAndUpdate: async (f: { _id: string }, p: Array<{ $set: Doc }>) => update(f._id, p),
      updateOne: async (f: { _id: string }, p: Array<{ $set: Doc }>) => void update(f._id, p),
      deleteOne: async (f: { _id: string }) => void docs.delete(f._id),
      deleteMany: async (f: { group: string }) => {
        for (const [id, doc] of docs) if (doc.group === f.group) docs.delete(id);
      },
    };
  };

  rateLimitStoreContract('MongoRateLimitStore (in-memory evaluation of its pipelines)', async () => {
    const collection = memoryCollection();
    const memDb = { collection: () => collection } as unknown as Db;
    return { store: (await mongoRateLimitStores(memDb))('read'), cleanup: async () => {} };
  });

  it('the evaluator orders a missing field before a date, as MongoDB does', function () {
    expect(evaluate({ $gt: ['$missing', new Date(0)] }, {})).to.equal(false);
    expect(evaluate({ $gt: ['$at', new Date(0)] }, { at: new Date(1) })).to.equal(true);
  });
});
