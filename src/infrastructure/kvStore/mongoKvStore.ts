/**
 * KvStore on MongoDB, in the environment's database:
 *
 * - `kv`: a document per record, `{_id: JSON [namespace, key], ns, key, value: JSON text,
 *   expiresAt: Date, owner?}`. A TTL index on `expiresAt` lets the server delete expired
 *   records; its monitor runs about once a minute, so every read also skips records whose
 *   `expiresAt` has passed by the injected clock. The value is kept as JSON text, so any JSON
 *   value round-trips exactly (keys with `$` or `.` included).
 * - `kv_owners`: a document per (namespace, owner) that putOwned writes first in its
 *   transaction. MongoDB transactions are snapshot-isolated: two putOwned of one owner could
 *   both count N - 1 live records and both insert. Both writing the owner's document makes the
 *   second a write conflict, which withTransaction retries from the start, so it counts again
 *   and sees the first's record. The count itself is always taken from `kv` (live records only),
 *   so no counter drifts when records expire or are deleted: the server counts the owner's live
 *   records on the `kv_owner` index, at most the limit's worth (a put at the limit is refused),
 *   and only for a put that adds a record. The document carries the latest expiry of the owner's
 *   records and its own TTL index removes it after that.
 *
 * putOwned needs a transaction, so a replica set (connectMongo checks it). Driver errors that
 * mean the server is unreachable become StoreUnavailableError.
 */
import type { ClientSession, Collection, Db, WriteConcernSettings } from 'mongodb';
import type { Clock } from '../../domain/clock.ts';
import type { KvStore, OwnedPut, OwnedRecords } from '../../core/kvStore.ts';
import { guarded, inTransaction, mongodb } from '../mongo/mongoConnection.ts';

interface KvDoc {
  _id: string;
  ns: string;
  key: string;
  value: string;
  expiresAt: Date;
  owner?: string;
}

interface OwnerDoc {
  _id: string;
  ns: string;
  owner: string;
  puts: number;
  expiresAt: Date;
}

export interface MongoKvStoreOptions {
  /**
   * Namespaces whose records can be recomputed (quotes): written with `w: 1` (acknowledged by
   * the primary alone) instead of the client's write concern (`majority` by default).
   */
  relaxedNamespaces?: string[];
}

export const KV_COLLECTION = 'kv';
export const KV_OWNERS_COLLECTION = 'kv_owners';

const DUPLICATE_KEY = 11000;
const RELAXED: WriteConcernSettings = { w: 1 };

const recordId = (namespace: string, key: string): string => JSON.stringify([namespace, key]);
const ownerId = (namespace: string, owner: string): string => JSON.stringify([namespace, owner]);

export class MongoKvStore implements KvStore {
  private readonly relaxedNamespaces: Set<string>;

  private constructor(
    private readonly db: Db,
    private readonly startSession: () => ClientSession,
    private readonly clock: Clock,
    options: MongoKvStoreOptions,
  ) {
    this.relaxedNamespaces = new Set(options.relaxedNamespaces ?? []);
  }

  /**
   * The store on `db`, its indexes created (idempotent): TTL indexes on `kv.expiresAt` and
   * `kv_owners.expiresAt`, and `{ns, owner, expiresAt}` on owned records for quota counts.
   */
  static async open(
    db: Db,
    startSession: () => ClientSession,
    clock: Clock,
    options: MongoKvStoreOptions = {},
  ): Promise<MongoKvStore> {
    await guarded(async () => {
      const kv = db.collection<KvDoc>(KV_COLLECTION);
      await kv.createIndex({ expiresAt: 1 }, { name: 'kv_ttl', expireAfterSeconds: 0 });
      await kv.createIndex(
        { ns: 1, owner: 1, expiresAt: 1 },
        { name: 'kv_owner', partialFilterExpression: { owner: { $exists: true } } },
      );
      await db
        .collection<OwnerDoc>(KV_OWNERS_COLLECTION)
        .createIndex({ expiresAt: 1 }, { name: 'kv_owners_ttl', expireAfterSeconds: 0 });
    });
    return new MongoKvStore(db, startSession, clock, options);
  }

  private get kv(): Collection<KvDoc> {
    return this.db.collection<KvDoc>(KV_COLLECTION);
  }

  private get owners(): Collection<OwnerDoc> {
    return this.db.collection<OwnerDoc>(KV_OWNERS_COLLECTION);
  }

  private now(): Date {
    return this.clock.now();
  }

  private writeConcern(namespace: string): { writeConcern?: WriteConcernSettings } {
    return this.relaxedNamespaces.has(namespace) ? { writeConcern: RELAXED } : {};
  }

  async get<T>(namespace: string, key: string): Promise<T | null> {
    const doc = await guarded(() =>
      this.kv.findOne({ _id: recordId(namespace, key), expiresAt: { $gt: this.now() } }, { projection: { value: 1 } }),
    );
    return doc ? (JSON.parse(doc.value) as T) : null;
  }

  async put<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<void> {
    await guarded(() =>
      this.kv.replaceOne(
        { _id: recordId(namespace, key) },
        { ns: namespace, key, value: JSON.stringify(value), expiresAt: new Date(expiresAt) },
        { upsert: true, ...this.writeConcern(namespace) },
      ),
    );
  }

  /**
   * Replaces the record only when it has expired, inserting it when there is none: a live
   * record makes the upsert's insert collide on `_id` (duplicate key), which answers false.
   */
  async putIfAbsent<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<boolean> {
    try {
      await guarded(() =>
        this.kv.replaceOne(
          { _id: recordId(namespace, key), expiresAt: { $lte: this.now() } },
          { ns: namespace, key, value: JSON.stringify(value), expiresAt: new Date(expiresAt) },
          { upsert: true, ...this.writeConcern(namespace) },
        ),
      );
      return true;
    } catch (err) {
      if (err instanceof mongodb().MongoServerError && err.code === DUPLICATE_KEY) return false;
      throw err;
    }
  }

  async delete(namespace: string, key: string): Promise<void> {
    await guarded(() => this.kv.deleteOne({ _id: recordId(namespace, key) }, this.writeConcern(namespace)));
  }

  private async owned(namespace: string, owner: string, now: Date, session: ClientSession): Promise<OwnedRecords> {
    const [row] = await this.kv
      .aggregate<{ count: number; next: Date }>(
        [
          { $match: { ns: namespace, owner, expiresAt: { $gt: now } } },
          { $group: { _id: null, count: { $sum: 1 }, next: { $min: '$expiresAt' } } },
        ],
        { session },
      )
      .toArray();
    return row ? { count: row.count, nextExpiresAt: row.next.getTime() } : { count: 0, nextExpiresAt: null };
  }

  async putOwned<T>(
    namespace: string,
    key: string,
    value: T,
    expiresAt: number,
    quota: { owner: string; limit: number },
  ): Promise<OwnedPut> {
    const { owner, limit } = quota;
    const json = JSON.stringify(value);
    const id = recordId(namespace, key);
    return inTransaction(
      this.startSession,
      async (s) => {
        const now = this.now();
        // Serialises this owner's putOwned calls (see the module comment).
        await this.owners.updateOne(
          { _id: ownerId(namespace, owner) },
          { $inc: { puts: 1 }, $max: { expiresAt: new Date(expiresAt) }, $set: { ns: namespace, owner } },
          { upsert: true, session: s },
        );
        const current = await this.kv.findOne(
          { _id: id, expiresAt: { $gt: now } },
          { projection: { owner: 1 }, session: s },
        );
        if (current?.owner !== owner) {
          const live = await this.owned(namespace, owner, now, s);
          if (live.count >= limit) return { stored: false, ...live };
        }
        await this.kv.replaceOne(
          { _id: id },
          { ns: namespace, key, value: json, expiresAt: new Date(expiresAt), owner },
          { upsert: true, session: s },
        );
        return { stored: true };
      },
      this.writeConcern(namespace),
    );
  }

  async ownedKeys(namespace: string, owner: string): Promise<Array<{ key: string; expiresAt: number }>> {
    const docs = await guarded(() =>
      this.kv
        .find({ ns: namespace, owner, expiresAt: { $gt: this.now() } }, { projection: { key: 1, expiresAt: 1 } })
        .sort({ expiresAt: 1, key: 1 })
        .toArray(),
    );
    return docs.map((d) => ({ key: d.key, expiresAt: d.expiresAt.getTime() }));
  }

  async purgeExpired(now: number): Promise<number> {
    const result = await guarded(() => this.kv.deleteMany({ expiresAt: { $lte: new Date(now) } }));
    return result.deletedCount;
  }

  /** The client is shared by the stores of both environments: closing it is the connection's business. */
  async close(): Promise<void> {}
}
