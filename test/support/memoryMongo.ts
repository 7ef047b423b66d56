/**
 * An in-memory stand-in for the part of the MongoDB driver the Mongo stores use, evaluating
 * queries with MongoDB's rules for the subset they send: equality and comparisons with type
 * bracketing (1 never matches true or '1'), null matching missing fields, dotted paths (a path
 * under a scalar is missing), `$in`, `$ne`, `$or`; sorts in BSON type order (missing and null
 * first); replaceOne/updateOne upserts with a duplicate-key error on `_id`; `$inc`, `$max`,
 * `$set`; `$match` + `$group` with `$sum`/`$min`. Transactions run one at a time and are undone
 * when their callback throws.
 *
 * It checks an adapter's logic against the contract suites (which calls it makes, in which
 * order, what it does with the answers) where no server can run. It is not MongoDB: arrays
 * inside documents, collations, write conflicts and the TTL monitor are not modelled, and the
 * suites on a real server (MONGODB_URL) remain the reference.
 */
import { MongoServerError, type ClientSession, type Db } from 'mongodb';

type Doc = Record<string, unknown>;
type Rows = Map<string, Doc>;

const isObject = (v: unknown): v is Doc =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

const resolve = (doc: Doc, path: string): unknown => {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (!isObject(value)) return undefined;
    value = value[part];
  }
  return value;
};

/** BSON type order: null/missing < numbers < strings < objects < arrays < booleans < dates. */
const rank = (v: unknown): number => {
  if (v === undefined || v === null) return 1;
  if (typeof v === 'number') return 2;
  if (typeof v === 'string') return 3;
  if (Array.isArray(v)) return 5;
  if (typeof v === 'boolean') return 8;
  if (v instanceof Date) return 9;
  return 4;
};

const compare = (a: unknown, b: unknown): number => {
  const [ra, rb] = [rank(a), rank(b)];
  if (ra !== rb) return ra - rb;
  if (ra === 1) return 0;
  if (ra === 2) return (a as number) - (b as number);
  if (ra === 3) return a! < b! ? -1 : a! > b! ? 1 : 0;
  if (ra === 8) return Number(a) - Number(b);
  if (ra === 9) return (a as Date).getTime() - (b as Date).getTime();
  const [ja, jb] = [JSON.stringify(a), JSON.stringify(b)];
  return ja < jb ? -1 : ja > jb ? 1 : 0;
};

const equals = (value: unknown, operand: unknown): boolean =>
  operand === null
    ? value === null || value === undefined
    : rank(value) === rank(operand) && compare(value, operand) === 0;

const ops: Record<string, (value: unknown, operand: unknown) => boolean> = {
  $eq: equals,
  $ne: (v, o) => !equals(v, o),
  $in: (v, o) => (o as unknown[]).some((x) => equals(v, x)),
  $gt: (v, o) => rank(v) === rank(o) && compare(v, o) > 0,
  $gte: (v, o) => rank(v) === rank(o) && compare(v, o) >= 0,
  $lt: (v, o) => rank(v) === rank(o) && compare(v, o) < 0,
  $lte: (v, o) => rank(v) === rank(o) && compare(v, o) <= 0,
  $exists: (v, o) => (v !== undefined) === o,
};

export const matches = (doc: Doc, filter: Doc): boolean =>
  Object.entries(filter).every(([key, cond]) => {
    if (key === '$or') return (cond as Doc[]).some((sub) => matches(doc, sub));
    const value = resolve(doc, key);
    if (isObject(cond) && Object.keys(cond).every((k) => k.startsWith('$'))) {
      return Object.entries(cond).every(([op, operand]) => {
        const test = ops[op];
        if (!test) throw new Error(`memoryMongo: operator ${op} is not modelled`);
        return test(value, operand);
      });
    }
    return equals(value, cond);
  });

const clone = <T>(v: T): T => structuredClone(v);

const duplicateKey = (id: string) =>
  new MongoServerError({ message: `E11000 duplicate key error dup key: { _id: ${JSON.stringify(id)} }`, code: 11000 });

const applyUpdate = (doc: Doc, update: Doc): Doc => {
  const out = clone(doc);
  for (const [op, fields] of Object.entries(update)) {
    for (const [field, value] of Object.entries(fields as Doc)) {
      if (op === '$set') out[field] = clone(value);
      else if (op === '$inc') out[field] = ((out[field] as number) ?? 0) + (value as number);
      else if (op === '$max')
        out[field] = out[field] === undefined || compare(value, out[field]) > 0 ? value : out[field];
      else throw new Error(`memoryMongo: update operator ${op} is not modelled`);
    }
  }
  return out;
};

const project = (doc: Doc, projection?: Doc): Doc =>
  projection ? Object.fromEntries(Object.entries(doc).filter(([k]) => k === '_id' || projection[k] === 1)) : clone(doc);

class Cursor {
  private sorting: Array<[string, 1 | -1]> = [];
  private skipped = 0;
  private limited = 0;
  constructor(
    private readonly rows: () => Doc[],
    private readonly projection?: Doc,
  ) {}
  sort(spec: Array<[string, 1 | -1]> | Record<string, 1 | -1>) {
    this.sorting = Array.isArray(spec) ? spec : (Object.entries(spec) as Array<[string, 1 | -1]>);
    return this;
  }
  skip(n: number) {
    this.skipped = n;
    return this;
  }
  limit(n: number) {
    this.limited = n;
    return this;
  }
  async toArray(): Promise<Doc[]> {
    const rows = this.rows().sort((a, b) => {
      for (const [field, dir] of this.sorting) {
        const c = compare(resolve(a, field), resolve(b, field));
        if (c !== 0) return c * dir;
      }
      return 0;
    });
    const end = this.limited > 0 ? this.skipped + this.limited : undefined;
    return rows.slice(this.skipped, end).map((d) => project(d, this.projection));
  }
}

/** An index as createIndex was asked for it: its key and options. */
export interface IndexRequest {
  key: Doc;
  options: Doc;
}

class Collection {
  constructor(
    private readonly rows: () => Rows,
    private readonly indexRequests: IndexRequest[] = [],
  ) {}

  private all(filter: Doc): Doc[] {
    return [...this.rows().values()].filter((d) => matches(d, filter));
  }

  async createIndex(key: Doc, options: Doc = {}): Promise<string> {
    this.indexRequests.push({ key, options });
    return 'index';
  }
  async findOne(filter: Doc, options: { projection?: Doc } = {}): Promise<Doc | null> {
    const [doc] = this.all(filter);
    return doc ? project(doc, options.projection) : null;
  }
  find(filter: Doc, options: { projection?: Doc } = {}): Cursor {
    return new Cursor(() => this.all(filter), options.projection);
  }
  async countDocuments(filter: Doc = {}): Promise<number> {
    return this.all(filter).length;
  }
  aggregate(pipeline: Doc[]): Cursor {
    return new Cursor(() => {
      let rows = [...this.rows().values()];
      for (const stage of pipeline) {
        if (stage.$match) rows = rows.filter((d) => matches(d, stage.$match as Doc));
        else if (stage.$group) {
          if (rows.length === 0) return [];
          const out: Doc = { _id: null };
          for (const [field, acc] of Object.entries(stage.$group as Doc)) {
            if (field === '_id') continue;
            const [[op, arg]] = Object.entries(acc as Doc);
            const values = rows.map((d) => (typeof arg === 'string' ? resolve(d, arg.slice(1)) : arg));
            out[field] =
              op === '$sum'
                ? values.reduce((s: number, v) => s + (v as number), 0)
                : values.reduce((m, v) => (compare(v, m) < 0 ? v : m));
          }
          rows = [out];
        } else throw new Error(`memoryMongo: stage ${Object.keys(stage)[0]} is not modelled`);
      }
      return rows;
    });
  }
  private upsert(filter: Doc, make: (current: Doc | undefined) => Doc, upsert: boolean) {
    const rows = this.rows();
    const [current] = this.all(filter);
    if (current) {
      rows.set(current._id as string, make(current));
      return { matchedCount: 1, upsertedCount: 0 };
    }
    if (!upsert) return { matchedCount: 0, upsertedCount: 0 };
    const id = filter._id as string;
    if (rows.has(id)) throw duplicateKey(id);
    rows.set(id, { ...make(undefined), _id: id });
    return { matchedCount: 0, upsertedCount: 1 };
  }
  async replaceOne(filter: Doc, replacement: Doc, options: { upsert?: boolean } = {}) {
    return this.upsert(filter, (c) => ({ ...clone(replacement), _id: c?._id ?? filter._id }), !!options.upsert);
  }
  async updateOne(filter: Doc, update: Doc, options: { upsert?: boolean } = {}) {
    return this.upsert(filter, (c) => applyUpdate(c ?? { _id: filter._id }, update), !!options.upsert);
  }
  async deleteOne(filter: Doc) {
    const [doc] = this.all(filter);
    if (doc) this.rows().delete(doc._id as string);
    return { deletedCount: doc ? 1 : 0 };
  }
  async deleteMany(filter: Doc) {
    const docs = this.all(filter);
    for (const d of docs) this.rows().delete(d._id as string);
    return { deletedCount: docs.length };
  }
  async bulkWrite(operations: Doc[]) {
    for (const op of operations) {
      const [[kind, args]] = Object.entries(op) as Array<[string, Doc]>;
      if (kind === 'replaceOne') await this.replaceOne(args.filter as Doc, args.replacement as Doc, args);
      else if (kind === 'deleteOne') await this.deleteOne(args.filter as Doc);
      else throw new Error(`memoryMongo: bulk operation ${kind} is not modelled`);
    }
    return {};
  }
}

export interface MemoryMongo {
  db: Db;
  startSession: () => ClientSession;
  /** The indexes asked for on each collection (not used by queries: every read scans). */
  indexes: (collection: string) => IndexRequest[];
}

/** A database with its sessions; every collection starts empty. */
export const memoryMongo = (): MemoryMongo => {
  let data = new Map<string, Rows>();
  const indexes = new Map<string, IndexRequest[]>();
  const indexesOf = (name: string): IndexRequest[] => {
    if (!indexes.has(name)) indexes.set(name, []);
    return indexes.get(name)!;
  };
  const rowsOf = (name: string) => () => {
    if (!data.has(name)) data.set(name, new Map());
    return data.get(name)!;
  };
  let queue: Promise<unknown> = Promise.resolve();
  const withTransaction = (fn: (s: unknown) => Promise<unknown>) => {
    const run = queue.then(async () => {
      const before = new Map([...data].map(([k, rows]) => [k, new Map([...rows].map(([id, d]) => [id, clone(d)]))]));
      try {
        return await fn(session);
      } catch (err) {
        data = before;
        throw err;
      }
    });
    queue = run.catch(() => undefined);
    return run;
  };
  const session = { withTransaction, endSession: async () => {} };
  return {
    db: { collection: (name: string) => new Collection(rowsOf(name), indexesOf(name)) } as unknown as Db,
    startSession: () => session as unknown as ClientSession,
    indexes: indexesOf,
  };
};
