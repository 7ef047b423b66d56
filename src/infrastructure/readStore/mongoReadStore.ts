/**
 * ReadStore on MongoDB. Each port collection is the MongoDB collection `<prefix>rm_<name>` of
 * the environment's database (connectMongo gives each environment its own), a document per
 * read-model document with its `id` as `_id`; checkpoints are documents `{_id: name, position}`
 * of `<prefix>checkpoints`.
 *
 * Documents are stored as their JSON form (JSON.parse(JSON.stringify(doc))), so what a
 * projection writes reads back exactly as from the SQLite store: undefined members dropped,
 * Dates as ISO strings.
 *
 * writeBatch replaces whole documents and sets the checkpoint in one transaction (a replica set
 * is needed; connectMongo checks it): a batch delivered again after a crash, or applied twice
 * by a retried commit, writes the same documents and the same checkpoint, so projection writes
 * stay idempotent under redelivery. withTransaction retries the whole batch on transient errors
 * (write conflicts, a primary election). Driver errors that mean the server is unreachable
 * become StoreUnavailableError.
 *
 * Query semantics follow MongoDB's, which the port's filter language was taken from; one
 * difference from the SQLite store the port does not cover: a condition on a field holding an
 * array matches when any element matches (read models keep no arrays they filter on).
 */
import type { AnyBulkWriteOperation, ClientSession, Collection, Db } from 'mongodb';
import {
  FencedWriteError,
  type Document,
  type Filter,
  type FindOptions,
  type ReadStore,
  type WriteBatch,
} from '../../core/readStore.ts';
import { guarded, inTransaction } from '../mongo/mongoConnection.ts';
import { collectionName, indexKey, mongoFilter, mongoSort } from './mongoFilter.ts';

type Stored = { _id: string } & Record<string, unknown>;
interface Checkpoint {
  _id: string;
  position: number;
}

export interface MongoReadStoreOptions {
  /** Prefix of every collection name, for two stores in one database (e.g. `analytics_`). */
  prefix?: string;
}

const PREFIX_RE = /^([a-z][a-z0-9]*_)?$/;

function assertId(id: unknown, what: string): asserts id is string {
  if (typeof id !== 'string' || id === '')
    throw new Error(`${what}: id must be a non-empty string, got ${JSON.stringify(id)}`);
}

function assertIdType(id: unknown, what: string): asserts id is string {
  if (typeof id !== 'string') throw new Error(`${what}: id must be a string, got ${JSON.stringify(id)}`);
}

function nonNegativeInteger(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${what} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The stored form of a document: its JSON form, `id` moved to `_id`. */
function toStored(collection: string, doc: Document): Stored {
  if (!isPlainObject(doc)) throw new Error(`upsert into ${collection}: document must be a plain object`);
  assertId(doc.id, `upsert into ${collection}`);
  const { id, ...rest } = JSON.parse(JSON.stringify(doc)) as Document;
  if ('_id' in rest) throw new Error(`upsert into ${collection}: a document may not have an _id member`);
  return { _id: id, ...rest };
}

function fromStored<T extends Document>(stored: Stored): T {
  const { _id, ...rest } = stored;
  return { id: _id, ...rest } as T;
}

export class MongoReadStore implements ReadStore {
  private constructor(
    private readonly db: Db,
    private readonly startSession: () => ClientSession,
    private readonly prefix: string,
  ) {}

  /** The store on `db`. Takes no server round trip: projections declare their indexes with ensureIndex on start. */
  static open(db: Db, startSession: () => ClientSession, options: MongoReadStoreOptions = {}): MongoReadStore {
    const prefix = options.prefix ?? '';
    if (!PREFIX_RE.test(prefix)) throw new Error(`invalid collection prefix ${JSON.stringify(prefix)}`);
    return new MongoReadStore(db, startSession, prefix);
  }

  private collection(collection: string): Collection<Stored> {
    return this.db.collection<Stored>(this.prefix + collectionName(collection));
  }

  private get checkpoints(): Collection<Checkpoint> {
    return this.db.collection<Checkpoint>(`${this.prefix}checkpoints`);
  }

  private transaction(work: (session: ClientSession) => Promise<void>): Promise<void> {
    return inTransaction(this.startSession, work);
  }

  async get<T extends Document = Document>(collection: string, id: string): Promise<T | null> {
    const c = this.collection(collection);
    assertIdType(id, `get from ${collection}`);
    const stored = await guarded(() => c.findOne({ _id: id }));
    return stored ? fromStored<T>(stored) : null;
  }

  async getMany<T extends Document = Document>(collection: string, ids: string[]): Promise<Map<string, T>> {
    const c = this.collection(collection);
    const unique = [...new Set(ids)];
    unique.forEach((id) => assertIdType(id, `getMany from ${collection}`));
    const found = new Map<string, T>();
    if (unique.length === 0) return found;
    const docs = await guarded(() => c.find({ _id: { $in: unique } }).toArray());
    for (const stored of docs) found.set(stored._id, fromStored<T>(stored));
    return found;
  }

  async find<T extends Document = Document>(
    collection: string,
    filter: Filter = {},
    options: FindOptions = {},
  ): Promise<T[]> {
    const c = this.collection(collection);
    const query = mongoFilter(filter);
    const sort = mongoSort(options.sort);
    const skip = options.skip === undefined ? 0 : nonNegativeInteger(options.skip, 'skip');
    const limit = options.limit === undefined ? undefined : nonNegativeInteger(options.limit, 'limit');
    if (limit === 0) return []; // MongoDB reads limit 0 as "no limit"
    const docs = await guarded(() => {
      let cursor = c.find(query).sort(sort);
      if (skip > 0) cursor = cursor.skip(skip);
      if (limit !== undefined) cursor = cursor.limit(limit);
      return cursor.toArray();
    });
    return docs.map((stored) => fromStored<T>(stored));
  }

  async count(collection: string, filter: Filter = {}): Promise<number> {
    const c = this.collection(collection);
    const query = mongoFilter(filter);
    return guarded(() => c.countDocuments(query));
  }

  async writeBatch(batch: WriteBatch): Promise<void> {
    // Everything is checked and converted before the transaction starts.
    const byCollection = new Map<string, AnyBulkWriteOperation<Stored>[]>();
    const ops = (collection: string) => {
      const name = this.prefix + collectionName(collection);
      let list = byCollection.get(name);
      if (!list) byCollection.set(name, (list = []));
      return list;
    };
    for (const { collection, doc } of batch.upserts ?? []) {
      const stored = toStored(collection, doc);
      ops(collection).push({ replaceOne: { filter: { _id: stored._id }, replacement: stored, upsert: true } });
    }
    for (const { collection, id } of batch.deletes ?? []) {
      assertId(id, `delete from ${collection}`);
      ops(collection).push({ deleteOne: { filter: { _id: id } } });
    }
    const checkpoint = batch.checkpoint;
    if (checkpoint !== undefined) {
      assertId(checkpoint.name, 'checkpoint');
      nonNegativeInteger(checkpoint.position, `checkpoint ${checkpoint.name} position`);
    }
    const fence = batch.fence;
    if (fence) assertId(fence.id, `fence in ${fence.collection}`);
    if (byCollection.size === 0 && checkpoint === undefined) return;
    await this.transaction(async (session) => {
      if (fence) await this.checkFence(fence, session);
      for (const [name, list] of byCollection) {
        await this.db.collection<Stored>(name).bulkWrite(list, { session, ordered: true });
      }
      if (checkpoint !== undefined) {
        await this.checkpoints.updateOne(
          { _id: checkpoint.name },
          { $set: { position: checkpoint.position } },
          { upsert: true, session },
        );
      }
    });
  }

  /**
   * The fence's document, written in the transaction (a counter incremented): a transaction that
   * changes it meanwhile (a lease taken over) conflicts with this one, so one of them fails.
   */
  private async checkFence(fence: NonNullable<WriteBatch['fence']>, session: ClientSession): Promise<void> {
    const c = this.collection(fence.collection);
    if (fence.value === null) {
      if ((await c.findOne({ _id: fence.id }, { session })) !== null)
        throw new FencedWriteError(fence.collection, fence.id);
      return;
    }
    const result = await this.db
      .collection(this.prefix + collectionName(fence.collection))
      .updateOne({ _id: fence.id as never, [fence.field]: fence.value }, { $inc: { fenced_writes: 1 } }, { session });
    if (result.matchedCount === 0) throw new FencedWriteError(fence.collection, fence.id);
  }

  async getCheckpoint(name: string): Promise<number> {
    assertId(name, 'checkpoint');
    const doc = await guarded(() => this.checkpoints.findOne({ _id: name }));
    return doc?.position ?? 0;
  }

  async ensureIndex(collection: string, fields: string[]): Promise<void> {
    const c = this.collection(collection);
    const key = indexKey(fields);
    if (key !== null) await guarded(() => c.createIndex(key));
  }

  async reset(collections: string[], checkpointName: string): Promise<void> {
    assertId(checkpointName, 'checkpoint');
    const targets = collections.map((c) => this.collection(c));
    await this.transaction(async (session) => {
      for (const target of targets) await target.deleteMany({}, { session });
      await this.checkpoints.deleteOne({ _id: checkpointName }, { session });
    });
  }

  /** The client is shared by every store of the process: closing it is the connection's business. */
  async close(): Promise<void> {}
}
