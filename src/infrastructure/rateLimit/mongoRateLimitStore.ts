/**
 * express-rate-limit counters in MongoDB, shared by every API instance on the same server: the
 * fixed-window semantics of express-rate-limit's MemoryStore (a key's window starts at its
 * first hit and lasts `windowMs`; a hit after the reset time starts a new window), so a key's
 * limit holds across the fleet rather than per instance.
 *
 * One collection (`rate_limits`) holds a document per group and key,
 * `{_id: JSON [group, key], group, totalHits, resetTime}`. increment is one findOneAndUpdate
 * with an update pipeline and upsert, so counting and starting a new window are atomic on the
 * server: concurrent hits of one key each get their own count. A TTL index on `resetTime`
 * lets the server remove a key's document once its window is over (reads never rely on it:
 * a window whose reset time has passed counts as over whether or not it is still stored).
 *
 * Times come from `now()` (Date.now by default, as express-rate-limit's own), so the instances'
 * clocks should agree to well within a window. Driver errors that mean the server is
 * unreachable become StoreUnavailableError; the limiter lets such requests through (it is
 * built with passOnStoreError) and logs them.
 */
import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';
import type { Collection, Db } from 'mongodb';
import { guarded } from '../mongo/mongoConnection.ts';

export const RATE_LIMITS_COLLECTION = 'rate_limits';

interface Counter {
  _id: string;
  group: string;
  totalHits: number;
  resetTime: Date;
}

const counterId = (group: string, key: string): string => JSON.stringify([group, key]);

export class MongoRateLimitStore implements Store {
  /** Counters are shared by every instance (express-rate-limit's flag for stores that are not in-process). */
  readonly localKeys = false;
  /** The group: its counters are apart from other groups' (express-rate-limit keys stores by it). */
  readonly prefix: string;
  private windowMs = 60_000;

  constructor(
    private readonly counters: Collection<Counter>,
    group: string,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.prefix = group;
  }

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const doc = await guarded(() => this.counters.findOne({ _id: counterId(this.prefix, key) }));
    if (!doc || doc.resetTime.getTime() <= this.now()) return undefined;
    return { totalHits: doc.totalHits, resetTime: doc.resetTime };
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const now = new Date(this.now());
    const live = { $gt: ['$resetTime', now] }; // false when missing: BSON orders missing before any date
    const doc = await guarded(() =>
      this.counters.findOneAndUpdate(
        { _id: counterId(this.prefix, key) },
        [
          {
            $set: {
              group: { $literal: this.prefix },
              totalHits: { $cond: [live, { $add: ['$totalHits', 1] }, 1] },
              resetTime: { $cond: [live, '$resetTime', new Date(now.getTime() + this.windowMs)] },
            },
          },
        ],
        { upsert: true, returnDocument: 'after' },
      ),
    );
    if (!doc) throw new Error('rate limit store: the upsert returned no document');
    return { totalHits: doc.totalHits, resetTime: doc.resetTime };
  }

  /** As MemoryStore: one hit less, never below 0; a key without a document gets an empty window. */
  async decrement(key: string): Promise<void> {
    const fresh = new Date(this.now() + this.windowMs);
    await guarded(() =>
      this.counters.updateOne(
        { _id: counterId(this.prefix, key) },
        [
          {
            $set: {
              group: { $literal: this.prefix },
              totalHits: { $max: [0, { $subtract: [{ $ifNull: ['$totalHits', 0] }, 1] }] },
              resetTime: { $ifNull: ['$resetTime', fresh] },
            },
          },
        ],
        { upsert: true },
      ),
    );
  }

  async resetKey(key: string): Promise<void> {
    await guarded(() => this.counters.deleteOne({ _id: counterId(this.prefix, key) }));
  }

  async resetAll(): Promise<void> {
    await guarded(() => this.counters.deleteMany({ group: this.prefix }));
  }
}

/**
 * The rate-limit store factory on `db` (the shape src/http/rateLimits.ts takes: one store per
 * group), after creating the TTL index on `resetTime` and the `group` index resetAll uses.
 */
export const mongoRateLimitStores = async (
  db: Db,
  now?: () => number,
): Promise<(group: string) => MongoRateLimitStore> => {
  const counters = db.collection<Counter>(RATE_LIMITS_COLLECTION);
  await guarded(async () => {
    await counters.createIndex({ resetTime: 1 }, { name: 'rate_limits_ttl', expireAfterSeconds: 0 });
    await counters.createIndex({ group: 1 }, { name: 'rate_limits_group' });
  });
  return (group) => new MongoRateLimitStore(counters, group, now);
};
