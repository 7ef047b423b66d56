/**
 * Contract every ReadStore implementation must pass (SQLite now, MongoDB later). Only port
 * semantics (src/infrastructure/readStore/readStore.ts) are tested here; one store is shared
 * by the whole suite and every test uses its own random collection and checkpoint names.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Document, Filter, ReadStore } from '../../src/core/readStore.ts';

export type ReadStoreFactory = () => Promise<{ store: ReadStore; cleanup: () => Promise<void> }>;

/** Unique lower-case name, valid as a collection or checkpoint name. */
export function uniqueName(prefix = 'c'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  return expect.fail('expected the promise to reject');
}

const ids = (docs: Document[]): string[] => docs.map((d) => d.id);
const sortedIds = (docs: Document[]): string[] => ids(docs).sort();

/** Filter fixtures: mixed types on the same fields, nulls and missing fields. */
const FILTER_DOCS: Document[] = [
  {
    id: 'a',
    status: 'active',
    n: 1,
    price: 10.5,
    flag: true,
    at: '2024-01-01T00:00:00.000Z',
    meta: { tier: 'gold', level: 3 },
    opt: null,
  },
  {
    id: 'b',
    status: 'expired',
    n: 5,
    price: 2,
    flag: false,
    at: '2024-03-15T12:00:00.000Z',
    meta: { tier: 'silver', level: 1 },
    opt: 'set',
  },
  { id: 'c', status: 'active', n: 10, flag: 1, at: '2024-06-30T23:59:59.999Z', meta: { tier: 'gold' }, opt: 0 },
  { id: 'd', status: 'paused', n: '10', flag: 'true', at: '2023-12-31T23:59:59.999Z', meta: 'gold' },
  { id: 'e', status: null, n: -3, flag: 0, meta: { level: 7 } },
  { id: 'f', n: 5.5, flag: true, meta: { tier: 'bronze', level: null } },
];

const FILTER_CASES: Array<[title: string, filter: Filter, expected: string[]]> = [
  ['empty filter matches everything', {}, ['a', 'b', 'c', 'd', 'e', 'f']],
  ['string equality', { status: 'active' }, ['a', 'c']],
  ['equality with null matches null and missing', { status: null }, ['e', 'f']],
  ['$eq null matches null and missing', { status: { $eq: null } }, ['e', 'f']],
  ['$ne null matches present non-null values', { status: { $ne: null } }, ['a', 'b', 'c', 'd']],
  ['$ne value also matches null and missing', { status: { $ne: 'active' } }, ['b', 'd', 'e', 'f']],
  ['$eq string', { status: { $eq: 'paused' } }, ['d']],
  ['number equality does not match the numeric string', { n: 10 }, ['c']],
  ['string equality does not match the number', { n: '10' }, ['d']],
  ['float equality', { n: 5.5 }, ['f']],
  ['integer-valued equality', { price: 2 }, ['b']],
  ['true matches only JSON true (not 1 or "true")', { flag: true }, ['a', 'f']],
  ['false matches only JSON false (not 0)', { flag: false }, ['b']],
  ['1 does not match true', { flag: 1 }, ['c']],
  ['0 does not match false', { flag: 0 }, ['e']],
  ['"true" matches only the string', { flag: 'true' }, ['d']],
  ['$ne true', { flag: { $ne: true } }, ['b', 'c', 'd', 'e']],
  ['null equality vs null, 0 and strings', { opt: null }, ['a', 'd', 'e', 'f']],
  ['$ne null vs 0 and strings', { opt: { $ne: null } }, ['b', 'c']],
  ['false does not match 0', { opt: false }, []],
  ['dotted path equality', { 'meta.tier': 'gold' }, ['a', 'c']],
  ['dotted path under a scalar is missing', { 'meta.tier': null }, ['d', 'e']],
  ['dotted path null or missing', { 'meta.level': null }, ['c', 'd', 'f']],
  ['dotted path range', { 'meta.level': { $gte: 3 } }, ['a', 'e']],
  ['a nested object is not equal to a string', { meta: '{"tier":"gold","level":3}' }, []],
  ['a scalar where other docs have objects', { meta: 'gold' }, ['d']],
  ['$gt number matches numbers only', { n: { $gt: 5 } }, ['c', 'f']],
  ['$gte number', { n: { $gte: 5 } }, ['b', 'c', 'f']],
  ['$lt number (negative included)', { n: { $lt: 5 } }, ['a', 'e']],
  ['$lte number', { n: { $lte: 1 } }, ['a', 'e']],
  ['$gt float', { price: { $gt: 2 } }, ['a']],
  ['$gte on integer-valued number', { price: { $gte: 2 } }, ['a', 'b']],
  ['range with two operators is an AND', { n: { $gt: 1, $lt: 10 } }, ['b', 'f']],
  ['$gt string matches strings only', { n: { $gt: '0' } }, ['d']],
  [
    'ISO timestamp half-open range',
    { at: { $gte: '2024-01-01T00:00:00.000Z', $lt: '2024-06-30T00:00:00.000Z' } },
    ['a', 'b'],
  ],
  ['ISO timestamp $gt', { at: { $gt: '2024-01-01T00:00:00.000Z' } }, ['b', 'c']],
  ['ISO timestamp $lt a date prefix', { at: { $lt: '2024-01-01' } }, ['d']],
  ['ISO timestamp $lte ignores missing', { at: { $lte: '2024-06-30T23:59:59.999Z' } }, ['a', 'b', 'c', 'd']],
  ['$in strings', { status: { $in: ['active', 'paused'] } }, ['a', 'c', 'd']],
  ['$in with null matches missing', { status: { $in: [null, 'expired'] } }, ['b', 'e', 'f']],
  ['$in is type-aware', { n: { $in: [1, 10, '5'] } }, ['a', 'c']],
  ['$in with booleans and numbers', { flag: { $in: [true, 0] } }, ['a', 'e', 'f']],
  ['empty $in matches nothing', { status: { $in: [] } }, []],
  ['$in combined with $ne', { status: { $in: ['active', 'expired'], $ne: 'expired' } }, ['a', 'c']],
  ['$or', { $or: [{ status: 'expired' }, { n: { $lt: 0 } }] }, ['b', 'e']],
  ['$or AND other fields', { status: 'active', $or: [{ n: { $gt: 5 } }, { 'meta.level': 1 }] }, ['c']],
  ['nested $or', { $or: [{ status: 'paused' }, { $or: [{ n: -3 }, { 'meta.tier': 'bronze' }] }] }, ['d', 'e', 'f']],
  [
    '$or of multi-field filters',
    {
      $or: [
        { status: 'active', n: 1 },
        { flag: true, n: { $gt: 5 } },
      ],
    },
    ['a', 'f'],
  ],
  ['several fields are an AND', { status: 'active', n: { $gte: 10 } }, ['c']],
  ['id equality', { id: 'c' }, ['c']],
  ['id $in', { id: { $in: ['a', 'zz', 'e'] } }, ['a', 'e']],
  ['id range', { id: { $gt: 'd' } }, ['e', 'f']],
  ['id is a string', { id: { $gt: 0 } }, []],
];

/** Sort fixtures: ties on every field, one doc missing `group`. */
const SORT_DOCS: Document[] = [
  { id: 'k1', group: 'b', score: 2, m: { rank: 3 } },
  { id: 'k2', group: 'a', score: 2, m: { rank: 1 } },
  { id: 'k3', group: 'b', score: 5, m: { rank: 2 } },
  { id: 'k4', group: 'a', score: 2, m: { rank: 1 } },
  { id: 'k5', group: 'c', score: 1, m: { rank: 9 } },
  { id: 'k6', group: 'a', score: 9, m: { rank: 4 } },
  { id: 'k7', score: 3, m: { rank: 1 } },
];

export function readStoreContract(name: string, factory: ReadStoreFactory): void {
  describe(`ReadStore contract: ${name}`, function () {
    let store: ReadStore;
    let cleanup: () => Promise<void>;

    before(async function () {
      ({ store, cleanup } = await factory());
    });
    after(async function () {
      await cleanup?.();
    });

    async function seed(docs: Document[], collection = uniqueName()): Promise<string> {
      await store.writeBatch({ upserts: docs.map((doc) => ({ collection, doc })) });
      return collection;
    }

    describe('documents', function () {
      it('round-trips nested objects, arrays and every JSON type', async function () {
        const doc: Document = {
          id: 'v-1',
          code: 'it\'s "quoted" \\ ünïcødé 🎟',
          empty: '',
          amount: 12.75,
          negative: -4,
          zero: 0,
          active: true,
          archived: false,
          note: null,
          tags: ['a', 'b', 'a'],
          conditions: { valid_until: '2025-01-31T00:00:00.000Z', limits: { per_customer: 1, regions: ['EU', 'US'] } },
          history: [{ at: '2024-01-01T00:00:00.000Z', by: { user: 'u1' } }, []],
          nothing: {},
        };
        const c = await seed([doc]);
        expect(await store.get(c, 'v-1')).to.deep.equal(doc);
      });

      it('returns null for a missing id and for a collection never written', async function () {
        const c = await seed([{ id: 'x' }]);
        expect(await store.get(c, 'y')).to.equal(null);
        expect(await store.get(uniqueName(), 'x')).to.equal(null);
        expect(await store.find(uniqueName())).to.deep.equal([]);
        expect(await store.count(uniqueName())).to.equal(0);
      });

      it('upsert replaces the whole document', async function () {
        const c = await seed([{ id: 'x', a: 1, b: { c: 2 } }]);
        await store.writeBatch({ upserts: [{ collection: c, doc: { id: 'x', b: { d: 3 } } }] });
        expect(await store.get(c, 'x')).to.deep.equal({ id: 'x', b: { d: 3 } });
        expect(await store.count(c)).to.equal(1);
      });

      it('keeps the same id in different collections apart', async function () {
        const c1 = await seed([{ id: 'x', which: 1 }]);
        const c2 = await seed([{ id: 'x', which: 2 }]);
        expect(await store.get(c1, 'x')).to.deep.equal({ id: 'x', which: 1 });
        expect(await store.get(c2, 'x')).to.deep.equal({ id: 'x', which: 2 });
      });

      it('getMany returns found documents keyed by id, skipping missing ids and duplicates', async function () {
        const c = await seed([
          { id: 'a', v: 1 },
          { id: 'b', v: 2 },
          { id: 'c', v: 3 },
        ]);
        const found = await store.getMany(c, ['c', 'missing', 'a', 'c']);
        expect([...found.keys()].sort()).to.deep.equal(['a', 'c']);
        expect(found.get('a')).to.deep.equal({ id: 'a', v: 1 });
        expect(found.get('c')).to.deep.equal({ id: 'c', v: 3 });
        expect((await store.getMany(c, [])).size).to.equal(0);
        // One id (repeated or not): found, or an empty map.
        expect([...(await store.getMany(c, ['b', 'b'])).entries()]).to.deep.equal([['b', { id: 'b', v: 2 }]]);
        expect((await store.getMany(c, ['missing'])).size).to.equal(0);
      });

      it('getMany handles many ids at once', async function () {
        const docs = Array.from({ length: 1100 }, (_, i) => ({ id: `d${String(i).padStart(4, '0')}`, i }));
        const c = await seed(docs);
        const wanted = [...docs.map((d) => d.id), 'nope-1', 'nope-2'];
        const found = await store.getMany(c, wanted);
        expect(found.size).to.equal(1100);
        expect(found.get('d0000')).to.deep.equal({ id: 'd0000', i: 0 });
        expect(found.get('d1099')).to.deep.equal({ id: 'd1099', i: 1099 });
        expect(docs.every((d) => found.get(d.id)?.i === d.i)).to.equal(true);
      });
    });

    describe('filters', function () {
      let c: string;
      before(async function () {
        c = await seed(FILTER_DOCS);
      });

      for (const [title, filter, expected] of FILTER_CASES) {
        it(`${title}: ${JSON.stringify(filter)}`, async function () {
          expect(sortedIds(await store.find(c, filter))).to.deep.equal([...expected].sort());
          expect(await store.count(c, filter)).to.equal(expected.length);
        });
      }

      it('find returns whole documents', async function () {
        expect(await store.find(c, { id: 'b' })).to.deep.equal([FILTER_DOCS[1]]);
      });

      it('still answers correctly once indexes are declared (idempotently)', async function () {
        await store.ensureIndex(c, ['status']);
        await store.ensureIndex(c, ['status']);
        await store.ensureIndex(c, ['meta.tier', 'n']);
        await store.ensureIndex(c, ['at']);
        expect(sortedIds(await store.find(c, { status: 'active' }))).to.deep.equal(['a', 'c']);
        expect(sortedIds(await store.find(c, { 'meta.tier': 'gold', n: { $gt: 1 } }))).to.deep.equal(['c']);
        expect(sortedIds(await store.find(c, { at: { $gte: '2024-01-01T00:00:00.000Z' } }))).to.deep.equal([
          'a',
          'b',
          'c',
        ]);
        expect(ids(await store.find(c, { at: { $ne: null } }, { sort: [['at', -1]] }))).to.deep.equal([
          'c',
          'b',
          'a',
          'd',
        ]);
      });
    });

    describe('sort and pagination', function () {
      let c: string;
      before(async function () {
        c = await seed(SORT_DOCS);
      });

      const cases: Array<[title: string, sort: Array<[string, 1 | -1]>, expected: string[]]> = [
        ['number asc, ties by id', [['score', 1]], ['k5', 'k1', 'k2', 'k4', 'k7', 'k3', 'k6']],
        ['number desc, ties still by id asc', [['score', -1]], ['k6', 'k3', 'k7', 'k1', 'k2', 'k4', 'k5']],
        [
          'string asc (missing first) then number desc',
          [
            ['group', 1],
            ['score', -1],
          ],
          ['k7', 'k6', 'k2', 'k4', 'k3', 'k1', 'k5'],
        ],
        [
          'string desc (missing last) then number asc',
          [
            ['group', -1],
            ['score', 1],
          ],
          ['k5', 'k1', 'k3', 'k2', 'k4', 'k6', 'k7'],
        ],
        ['dotted path desc', [['m.rank', -1]], ['k5', 'k6', 'k1', 'k3', 'k2', 'k4', 'k7']],
        ['id desc', [['id', -1]], ['k7', 'k6', 'k5', 'k4', 'k3', 'k2', 'k1']],
        [
          'field then id desc',
          [
            ['score', 1],
            ['id', -1],
          ],
          ['k5', 'k4', 'k2', 'k1', 'k7', 'k3', 'k6'],
        ],
      ];
      for (const [title, sort, expected] of cases) {
        it(`sorts by ${title}`, async function () {
          expect(ids(await store.find(c, {}, { sort }))).to.deep.equal(expected);
        });
      }

      it('sorts filtered results', async function () {
        expect(ids(await store.find(c, { group: 'a' }, { sort: [['score', -1]] }))).to.deep.equal(['k6', 'k2', 'k4']);
      });

      it('applies skip and limit after sorting', async function () {
        const sort: Array<[string, 1 | -1]> = [['score', 1]];
        expect(ids(await store.find(c, {}, { sort, limit: 3 }))).to.deep.equal(['k5', 'k1', 'k2']);
        expect(ids(await store.find(c, {}, { sort, skip: 2, limit: 3 }))).to.deep.equal(['k2', 'k4', 'k7']);
        expect(ids(await store.find(c, {}, { sort, skip: 5 }))).to.deep.equal(['k3', 'k6']);
        expect(ids(await store.find(c, {}, { sort, skip: 7, limit: 3 }))).to.deep.equal([]);
        expect(ids(await store.find(c, { score: 2 }, { sort, skip: 1, limit: 1 }))).to.deep.equal(['k2']);
      });

      it('paginates over heavy ties returning every document exactly once', async function () {
        const docs = Array.from({ length: 23 }, (_, i) => ({
          id: `p${String((i * 7) % 23).padStart(2, '0')}`,
          bucket: i % 3,
        }));
        const pc = await seed(docs);
        const sort: Array<[string, 1 | -1]> = [['bucket', -1]];
        const all = ids(await store.find(pc, {}, { sort }));
        const paged: string[] = [];
        for (let skip = 0; skip < 30; skip += 4) paged.push(...ids(await store.find(pc, {}, { sort, skip, limit: 4 })));
        expect(paged).to.deep.equal(all);
        expect([...paged].sort()).to.deep.equal(docs.map((d) => d.id).sort());
        const byId = new Map(docs.map((d) => [d.id, d.bucket]));
        for (let i = 1; i < paged.length; i += 1) {
          const [prev, cur] = [paged[i - 1], paged[i]];
          const ordered = byId.get(prev)! > byId.get(cur)! || (byId.get(prev) === byId.get(cur) && prev < cur);
          expect(ordered, `${prev} before ${cur}`).to.equal(true);
        }
      });
    });

    describe('writeBatch and checkpoints', function () {
      it('getCheckpoint is 0 when never written', async function () {
        expect(await store.getCheckpoint(uniqueName('cp'))).to.equal(0);
      });

      it('writes documents in several collections together with the checkpoint', async function () {
        const [c1, c2, cp] = [uniqueName(), uniqueName(), uniqueName('cp')];
        await store.writeBatch({
          upserts: [
            { collection: c1, doc: { id: 'a', v: 1 } },
            { collection: c2, doc: { id: 'b', v: 2 } },
          ],
          checkpoint: { name: cp, position: 42 },
        });
        expect(await store.get(c1, 'a')).to.deep.equal({ id: 'a', v: 1 });
        expect(await store.get(c2, 'b')).to.deep.equal({ id: 'b', v: 2 });
        expect(await store.getCheckpoint(cp)).to.equal(42);
      });

      it('overwrites a checkpoint and keeps checkpoint names independent', async function () {
        const [cp1, cp2] = [uniqueName('cp'), uniqueName('cp')];
        await store.writeBatch({ checkpoint: { name: cp1, position: 5 } });
        await store.writeBatch({ checkpoint: { name: cp2, position: 7 } });
        await store.writeBatch({ checkpoint: { name: cp1, position: 1_234_567_890_123 } });
        expect(await store.getCheckpoint(cp1)).to.equal(1_234_567_890_123);
        expect(await store.getCheckpoint(cp2)).to.equal(7);
      });

      it('an empty batch is a no-op', async function () {
        await store.writeBatch({});
        await store.writeBatch({ upserts: [], deletes: [] });
      });

      it('deletes documents; deleting a missing id is not an error', async function () {
        const c = await seed([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
        await store.writeBatch({
          deletes: [
            { collection: c, id: 'b' },
            { collection: c, id: 'nope' },
          ],
        });
        expect(await store.get(c, 'b')).to.equal(null);
        expect(sortedIds(await store.find(c))).to.deep.equal(['a', 'c']);
      });

      it('applies upserts of the same id in order (last wins)', async function () {
        const c = uniqueName();
        await store.writeBatch({
          upserts: [
            { collection: c, doc: { id: 'a', v: 1 } },
            { collection: c, doc: { id: 'a', v: 2 } },
          ],
        });
        expect(await store.find(c)).to.deep.equal([{ id: 'a', v: 2 }]);
      });

      for (const [what, bad] of [
        ['a document without an id', { v: 'no id' }],
        ['a document with a numeric id', { id: 7 }],
      ] as const) {
        it(`is all or nothing: a batch with ${what} writes nothing, not even the checkpoint`, async function () {
          const [c, other, cp] = [uniqueName(), uniqueName(), uniqueName('cp')];
          await store.writeBatch({
            upserts: [{ collection: c, doc: { id: 'keep', v: 0 } }],
            checkpoint: { name: cp, position: 3 },
          });
          const err = await rejection(
            store.writeBatch({
              upserts: [
                { collection: c, doc: { id: 'keep', v: 1 } },
                { collection: other, doc: { id: 'new', v: 1 } },
                { collection: c, doc: bad as unknown as Document },
              ],
              deletes: [{ collection: c, id: 'keep' }],
              checkpoint: { name: cp, position: 9 },
            }),
          );
          expect(err).to.be.instanceOf(Error);
          expect(await store.get(c, 'keep')).to.deep.equal({ id: 'keep', v: 0 });
          expect(await store.get(other, 'new')).to.equal(null);
          expect(await store.count(other)).to.equal(0);
          expect(await store.getCheckpoint(cp)).to.equal(3);
        });
      }
    });

    describe('reset', function () {
      it('clears the collections and the checkpoint, nothing else', async function () {
        const c1 = await seed([{ id: 'a' }, { id: 'b' }]);
        const c2 = await seed([{ id: 'c' }]);
        const untouched = await seed([{ id: 'd', v: 1 }]);
        const [cp, otherCp] = [uniqueName('cp'), uniqueName('cp')];
        await store.writeBatch({ checkpoint: { name: cp, position: 10 } });
        await store.writeBatch({ checkpoint: { name: otherCp, position: 20 } });

        await store.reset([c1, c2], cp);

        expect(await store.count(c1)).to.equal(0);
        expect(await store.find(c2)).to.deep.equal([]);
        expect(await store.get(c1, 'a')).to.equal(null);
        expect(await store.getCheckpoint(cp)).to.equal(0);
        expect(await store.find(untouched)).to.deep.equal([{ id: 'd', v: 1 }]);
        expect(await store.getCheckpoint(otherCp)).to.equal(20);

        await store.writeBatch({
          upserts: [{ collection: c1, doc: { id: 'z' } }],
          checkpoint: { name: cp, position: 1 },
        });
        expect(ids(await store.find(c1))).to.deep.equal(['z']);
        expect(await store.getCheckpoint(cp)).to.equal(1);
      });

      it('accepts collections that were never written', async function () {
        const cp = uniqueName('cp');
        await store.writeBatch({ checkpoint: { name: cp, position: 4 } });
        await store.reset([uniqueName()], cp);
        expect(await store.getCheckpoint(cp)).to.equal(0);
      });
    });
  });
}
