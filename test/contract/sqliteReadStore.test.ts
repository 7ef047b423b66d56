import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import type { Document, Filter, FindOptions } from '../../src/core/readStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { readStoreContract, uniqueName } from './readStoreContract.ts';

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(Error);
    return err as Error;
  }
  return expect.fail('expected the promise to reject');
}

readStoreContract('SqliteReadStore', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-'));
  const store = SqliteReadStore.open(path.join(dir, 'read.db'));
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteReadStore (SQLite specifics)', function () {
  let dir: string;
  let file: string;
  let store: SqliteReadStore;

  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-'));
    file = path.join(dir, 'nested', 'deeper', 'read.db');
    store = SqliteReadStore.open(file);
  });
  afterEach(async function () {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates the parent directory and uses WAL journaling', function () {
    expect(fs.existsSync(file)).to.equal(true);
    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).to.equal('wal');
    } finally {
      raw.close();
    }
  });

  it('keeps documents and checkpoints across close and reopen', async function () {
    const doc = { id: 'v1', nested: { list: [1, 'two', { three: 3 }] } };
    await store.writeBatch({ upserts: [{ collection: 'vouchers', doc }], checkpoint: { name: 'proj', position: 77 } });
    await store.close();
    await store.close(); // idempotent
    store = SqliteReadStore.open(file);
    expect(await store.get('vouchers', 'v1')).to.deep.equal(doc);
    expect(await store.getCheckpoint('proj')).to.equal(77);
    expect(await store.count('vouchers')).to.equal(1);
  });

  it('a second store on the same file sees committed writes', async function () {
    const other = SqliteReadStore.open(file);
    try {
      await store.writeBatch({
        upserts: [{ collection: 'shared', doc: { id: 'x', v: 1 } }],
        checkpoint: { name: 'p', position: 2 },
      });
      expect(await other.get('shared', 'x')).to.deep.equal({ id: 'x', v: 1 });
      expect(await other.getCheckpoint('p')).to.equal(2);
    } finally {
      await other.close();
    }
  });

  describe('expression indexes', function () {
    const docs: Document[] = Array.from({ length: 50 }, (_, i) => ({
      id: `d${i}`,
      status: ['active', 'expired', 'paused'][i % 3],
      conditions: { valid_until: `2024-${String((i % 12) + 1).padStart(2, '0')}-01T00:00:00.000Z`, min: i },
    }));

    async function plan(collection: string, filter: Filter, options: FindOptions = {}): Promise<string> {
      return store.explainFind(collection, filter, options).join('\n');
    }

    it('scans without an index and searches the declared index afterwards', async function () {
      const c = uniqueName();
      await store.writeBatch({ upserts: docs.map((doc) => ({ collection: c, doc })) });
      expect(await plan(c, { status: 'active' }))
        .to.match(/^SCAN rm_/)
        .and.not.include('ix_rm_');

      await store.ensureIndex(c, ['status']);
      expect(await plan(c, { status: 'active' })).to.include(`SEARCH rm_${c} USING INDEX ix_rm_${c}(status)`);
      expect(await plan(c, { status: { $in: ['active', 'paused'] } })).to.include(`USING INDEX ix_rm_${c}(status)`);
      expect(await store.count(c, { status: 'active' })).to.equal(17);
    });

    it('uses a composite index on a dotted path for equality plus range', async function () {
      const c = uniqueName();
      await store.writeBatch({ upserts: docs.map((doc) => ({ collection: c, doc })) });
      await store.ensureIndex(c, ['status', 'conditions.valid_until']);
      await store.ensureIndex(c, ['conditions.min']);
      const filter: Filter = { status: 'active', 'conditions.valid_until': { $gte: '2024-06-01', $lt: '2024-10-01' } };
      expect(await plan(c, filter)).to.include(`USING INDEX ix_rm_${c}(status,conditions.valid_until)`);
      expect(await plan(c, { 'conditions.min': { $gt: 45 } })).to.include(`USING INDEX ix_rm_${c}(conditions.min)`);
      const sorted = await plan(c, { 'conditions.min': { $gt: 45 } }, { sort: [['conditions.min', -1]], limit: 2 });
      expect(sorted).to.include(`USING INDEX ix_rm_${c}(conditions.min)`);
      expect(sorted).not.to.match(/TEMP B-TREE FOR ORDER BY/); // index order, only the id tiebreak is sorted
      const top = await store.find(c, { 'conditions.min': { $gt: 45 } }, { sort: [['conditions.min', -1]], limit: 2 });
      expect(top.map((d) => d.id)).to.deep.equal(['d49', 'd48']);
      const found = await store.find(c, filter, { sort: [['conditions.valid_until', 1]] });
      const expected = docs
        .filter((d) => d.status === 'active')
        .filter((d) => {
          const until = (d.conditions as { valid_until: string }).valid_until;
          return until >= '2024-06-01' && until < '2024-10-01';
        })
        .sort(
          (a, b) =>
            (a.conditions as { valid_until: string }).valid_until.localeCompare(
              (b.conditions as { valid_until: string }).valid_until,
            ) || a.id.localeCompare(b.id),
        );
      expect(found.map((d) => d.id)).to.deep.equal(expected.map((d) => d.id));
      expect(expected.length).to.be.greaterThan(0);
    });
  });

  describe('input validation', function () {
    const badCollections = ['Users', 'a-b', '1abc', '', 'x"; DROP TABLE checkpoints; --', 'rm x', 'ünï'];
    for (const bad of badCollections) {
      it(`rejects the collection name ${JSON.stringify(bad)} everywhere`, async function () {
        for (const attempt of [
          store.get(bad, 'x'),
          store.getMany(bad, ['x']),
          store.find(bad),
          store.count(bad),
          store.ensureIndex(bad, ['a']),
          store.writeBatch({ upserts: [{ collection: bad, doc: { id: 'x' } }] }),
          store.writeBatch({ deletes: [{ collection: bad, id: 'x' }] }),
          store.reset([bad], 'cp'),
        ]) {
          expect((await rejection(attempt)).message).to.match(/invalid collection name/);
        }
      });
    }

    const badFields = ['a-b', 'a..b', '.a', 'a.', '$where', "a') OR 1=1 --", 'a b', '1a', 'a.1'];
    for (const bad of badFields) {
      it(`rejects the field path ${JSON.stringify(bad)} in filters, sorts and indexes`, async function () {
        const c = uniqueName();
        expect((await rejection(store.find(c, { $or: [{ [bad]: 1 }] }))).message).to.match(
          /invalid field path|unsupported/,
        );
        expect((await rejection(store.find(c, {}, { sort: [[bad, 1]] }))).message).to.match(/invalid field path/);
        expect((await rejection(store.ensureIndex(c, ['ok', bad]))).message).to.match(/invalid field path/);
      });
    }

    const badFilters: Array<[string, unknown]> = [
      ['$regex', { a: { $regex: '^x' } }],
      ['$nin', { a: { $nin: [1] } }],
      ['$exists', { a: { $exists: true } }],
      ['top-level $and', { $and: [{ a: 1 }] }],
      ['empty $or', { $or: [] }],
      ['undefined value', { a: undefined }],
      ['undefined operand', { a: { $gt: undefined } }],
      ['object equality', { a: { b: 1 } }],
      ['array equality', { a: [1, 2] }],
      ['empty operator object', { a: {} }],
      ['Date value', { a: new Date(0) }],
      ['NaN', { a: { $gt: Number.NaN } }],
      ['$gt boolean', { a: { $gt: true } }],
      ['$in not an array', { a: { $in: 'x' } }],
    ];
    for (const [title, filter] of badFilters) {
      it(`rejects a filter with ${title}`, async function () {
        await rejection(store.find(uniqueName(), filter as Filter));
        await rejection(store.count(uniqueName(), filter as Filter));
      });
    }

    it('rejects bad sort directions and skip/limit values', async function () {
      const c = uniqueName();
      await rejection(store.find(c, {}, { sort: [['a', 0 as 1]] }));
      await rejection(store.find(c, {}, { limit: -1 }));
      await rejection(store.find(c, {}, { skip: 1.5 }));
    });

    it('limit 0 returns nothing', async function () {
      const c = uniqueName();
      await store.writeBatch({ upserts: [{ collection: c, doc: { id: 'a' } }] });
      expect(await store.find(c, {}, { limit: 0 })).to.deep.equal([]);
    });

    it('rolls back when serialisation fails part-way through a batch', async function () {
      const c = uniqueName();
      const circular: Record<string, unknown> = { id: 'loop' };
      circular.self = circular;
      await rejection(
        store.writeBatch({
          upserts: [
            { collection: c, doc: { id: 'a' } },
            { collection: c, doc: circular as Document },
          ],
          checkpoint: { name: 'cp-rollback', position: 1 },
        }),
      );
      await rejection(
        store.writeBatch({
          upserts: [{ collection: c, doc: { id: 'b' } }],
          checkpoint: { name: 'cp-rollback', position: -1 },
        }),
      );
      expect(await store.count(c)).to.equal(0);
      expect(await store.getCheckpoint('cp-rollback')).to.equal(0);
    });
  });

  describe('SQL injection', function () {
    const nasty = [
      `' OR 1=1 --`,
      `"); DROP TABLE checkpoints; --`,
      `x' UNION SELECT doc FROM rm_secrets --`,
      `\\'; --`,
    ];

    it('treats quotes and SQL in ids and values as plain data', async function () {
      const c = uniqueName();
      await store.writeBatch({
        upserts: [
          ...nasty.map((s, i) => ({ collection: c, doc: { id: s, name: s, i } })),
          { collection: c, doc: { id: 'plain', name: 'plain', i: 99 } },
        ],
        checkpoint: { name: nasty[1], position: 5 },
      });
      for (const [i, s] of nasty.entries()) {
        expect(await store.get(c, s)).to.deep.equal({ id: s, name: s, i });
        expect(await store.find(c, { name: s })).to.deep.equal([{ id: s, name: s, i }]);
        expect(await store.count(c, { name: { $in: [s] } })).to.equal(1);
        expect(await store.count(c, { name: { $gt: s } })).to.equal([...nasty, 'plain'].filter((o) => o > s).length);
      }
      expect((await store.getMany(c, nasty)).size).to.equal(nasty.length);
      expect(await store.count(c)).to.equal(nasty.length + 1);
      expect(await store.getCheckpoint(nasty[1])).to.equal(5);
      await store.writeBatch({ deletes: [{ collection: c, id: nasty[0] }] });
      expect(await store.count(c)).to.equal(nasty.length);
      expect(await store.get(c, 'plain')).to.deep.equal({ id: 'plain', name: 'plain', i: 99 });
    });
  });
});
