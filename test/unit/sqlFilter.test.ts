import Database from 'better-sqlite3';
import { expect } from 'chai';
import fc from 'fast-check';
import type { Filter, Scalar } from '../../src/core/readStore.ts';
import {
  assertFieldPath,
  compileFilter,
  compileSort,
  indexDdl,
  tableName,
  valueExpr,
} from '../../src/infrastructure/readStore/sqlFilter.ts';

/** Reference semantics of the port, written independently of the SQL compiler. */
function lookup(doc: Record<string, unknown>, path: string): unknown {
  let current: unknown = doc;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
function refEquals(value: unknown, x: Scalar): boolean {
  return x === null ? value === null || value === undefined : typeof value === typeof x && value === x;
}
function refMatches(doc: Record<string, unknown>, filter: Filter): boolean {
  return Object.entries(filter).every(([key, cond]) => {
    if (key === '$or') return (cond as Filter[]).some((sub) => refMatches(doc, sub));
    const value = lookup(doc, key);
    if (cond === null || typeof cond !== 'object') return refEquals(value, cond as Scalar);
    return Object.entries(cond).every(([op, x]) => {
      switch (op) {
        case '$eq':
          return refEquals(value, x);
        case '$ne':
          return !refEquals(value, x);
        case '$in':
          return (x as Scalar[]).some((y) => refEquals(value, y));
        default: {
          if (typeof value !== typeof x) return false;
          const [a, b] = [value as string | number, x as string | number];
          return op === '$gt' ? a > b : op === '$gte' ? a >= b : op === '$lt' ? a < b : a <= b;
        }
      }
    });
  });
}

describe('sqlFilter', function () {
  it('compiles an empty filter to a tautology without parameters', function () {
    expect(compileFilter({})).to.deep.equal({ where: '1', params: [] });
    expect(compileFilter()).to.deep.equal({ where: '1', params: [] });
  });

  it('binds every value and never writes it into the SQL', function () {
    const filter: Filter = {
      name: "x' OR '1'='1",
      $or: [{ 'a.b': { $gt: 2, $lt: 9 } }, { c: { $in: ['p', 3, null, true] } }],
      d: { $ne: 'zz"q' },
    };
    const { where, params } = compileFilter(filter);
    expect(where).not.to.include("x'");
    expect(where).not.to.include('zz');
    expect(where).not.to.include("'p'");
    expect(params).to.have.members(["x' OR '1'='1", 2, 9, 'p', 3, 'zz"q']);
    expect(where.split('?').length - 1).to.equal(params.length);
  });

  it('uses the same value expression as the index, and the id column for id', function () {
    expect(valueExpr('conditions.valid_until')).to.equal("json_extract(doc, '$.conditions.valid_until')");
    expect(valueExpr('id')).to.equal('id');
    expect(compileFilter({ 'conditions.valid_until': { $gte: 'x' } }).where).to.include(
      "json_extract(doc, '$.conditions.valid_until') >= ?",
    );
    expect(indexDdl('vouchers', ['status', 'conditions.valid_until'])).to.equal(
      `CREATE INDEX IF NOT EXISTS "ix_rm_vouchers(status,conditions.valid_until)" ON "rm_vouchers" ` +
        `(json_extract(doc, '$.status'), json_extract(doc, '$.conditions.valid_until'))`,
    );
    expect(indexDdl('vouchers', ['id'])).to.equal(null);
  });

  it('sorts with an id tiebreak unless id is sorted on', function () {
    expect(compileSort()).to.equal('id ASC');
    expect(
      compileSort([
        ['a', -1],
        ['b.c', 1],
      ]),
    ).to.equal("json_extract(doc, '$.a') DESC, json_extract(doc, '$.b.c') ASC, id ASC");
    expect(
      compileSort([
        ['id', -1],
        ['a', 1],
      ]),
    ).to.equal("id DESC, json_extract(doc, '$.a') ASC");
  });

  it('validates names', function () {
    expect(tableName('voucher_codes2')).to.equal('"rm_voucher_codes2"');
    for (const bad of ['Voucher', '_x', '2x', 'a-b', 'a"b', ''])
      expect(() => tableName(bad), bad).to.throw(/invalid collection name/);
    for (const ok of ['a', 'A_b.c9._d', 'id']) expect(() => assertFieldPath(ok)).not.to.throw();
    for (const bad of ['', 'a.', '.a', 'a..b', 'a-b', "a'", '$a', 'a.0'])
      expect(() => assertFieldPath(bad), bad).to.throw(/invalid field path/);
    expect(() => compileSort([['a', 2 as 1]])).to.throw(/direction/);
    expect(() => indexDdl('x', [])).to.throw(/at least one field/);
  });

  describe('agrees with the reference semantics on random documents and filters (SQLite in memory)', function () {
    const db = new Database(':memory:');
    after(() => db.close());

    const fields = ['a', 'b', 'n.x', 'n.y'];
    // Mixed JSON types, including look-alikes: 1/true/'1', 0/false/'0', an object vs its JSON text.
    const scalars: Scalar[] = [
      null,
      true,
      false,
      0,
      1,
      2.5,
      -1,
      10,
      '',
      '0',
      '1',
      '10',
      'a',
      'ab',
      'b',
      'true',
      '{"x":1}',
    ];
    const scalar = fc.constantFrom(...scalars);
    const comparable = fc.constantFrom<string | number>(0, 1, 2.5, -1, 10, '', '0', '1', '10', 'a', 'ab', 'b');
    const docValue = fc.oneof(scalar, fc.constant({ x: 1 }), fc.record({ x: scalar, y: scalar }, { requiredKeys: [] }));
    const docArb = fc.record({ a: docValue, b: scalar, n: docValue }, { requiredKeys: [] });
    const ops = fc
      .record(
        {
          $eq: scalar,
          $ne: scalar,
          $gt: comparable,
          $gte: comparable,
          $lt: comparable,
          $lte: comparable,
          $in: fc.array(scalar, { maxLength: 4 }),
        },
        { requiredKeys: [] },
      )
      .filter((o) => Object.keys(o).length > 0);
    const condition = fc.oneof(scalar, ops);
    const leaf = fc.dictionary(fc.constantFrom(...fields), condition, { maxKeys: 2 });
    const filterArb: fc.Arbitrary<Filter> = fc.oneof(
      leaf as fc.Arbitrary<Filter>,
      fc
        .tuple(leaf, fc.array(leaf, { minLength: 1, maxLength: 3 }))
        .map(([base, or]) => ({ ...base, $or: or }) as Filter),
    );

    it('returns exactly the documents the reference matcher accepts', function () {
      let table = 0;
      fc.assert(
        fc.property(fc.array(docArb, { maxLength: 12 }), filterArb, (rawDocs, filter) => {
          const name = `t${(table += 1)}`;
          db.exec(`CREATE TABLE ${name} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
          const docs = rawDocs.map((d, i) => ({ id: `d${String(i).padStart(2, '0')}`, ...d }));
          const insert = db.prepare(`INSERT INTO ${name} (id, doc) VALUES (?, ?)`);
          for (const d of docs) insert.run(d.id, JSON.stringify(d));
          const { where, params } = compileFilter(filter);
          const got = db
            .prepare(`SELECT id FROM ${name} WHERE ${where} ORDER BY id`)
            .pluck()
            .all(...params);
          const expected = docs.filter((d) => refMatches(d, filter)).map((d) => d.id);
          expect(got, `${JSON.stringify(filter)} on ${JSON.stringify(docs)}`).to.deep.equal(expected);
        }),
        { numRuns: 400 },
      );
    });
  });
});
