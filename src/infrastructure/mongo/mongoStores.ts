/**
 * The MongoDB stores of a process, from MONGODB_URL: what composition builds in place of the
 * embedded SQLite stores when MONGODB_URL is set.
 *
 *   <name>_sandbox, <name>_production   one database per environment (never shared):
 *     rm_<collection>, checkpoints        the core read models (projection group `core`)
 *     analytics_rm_<collection>, analytics_checkpoints   the analytics group
 *     kv, kv_owners                       quotes and idempotency records (KvStore)
 *   <name>                               what the process shares across environments:
 *     rate_limits                         express-rate-limit counters of every API instance
 *
 * `<name>` is the database of MONGODB_URL (`vouchers` when it names none).
 */
import { MongoSnapshotStore } from '../snapshots/mongoSnapshotStore.ts';
import type { Clock } from '../../domain/clock.ts';
import { MongoKvStore } from '../kvStore/mongoKvStore.ts';
import { mongoRateLimitStores, type MongoRateLimitStore } from '../rateLimit/mongoRateLimitStore.ts';
import { MongoReadStore } from '../readStore/mongoReadStore.ts';
import { connectMongo, type ConnectOptions, type MongoConnection } from './mongoConnection.ts';

export interface MongoEnvironmentStores {
  /** Read models of the core projection group. */
  core: MongoReadStore;
  /** Read models of the analytics projection group (collections prefixed `analytics_`). */
  analytics: MongoReadStore;
  kv: MongoKvStore;
  /** Voucher snapshots (collections `snapshots`, `snapshot_entries`). */
  snapshots: MongoSnapshotStore;
}

export interface MongoStores {
  connection: MongoConnection;
  /** An environment's stores, the key-value store's indexes created. */
  environment(environment: 'sandbox' | 'production'): Promise<MongoEnvironmentStores>;
  /** The limiter's store factory (one store per endpoint group), its indexes created. */
  rateLimitStores(): Promise<(group: string) => MongoRateLimitStore>;
  close(): Promise<void>;
}

/**
 * Connects to MONGODB_URL, checking the server (see connectMongo: a clear Error naming
 * MONGODB_URL when it is unreachable, not a replica set, or the URL is malformed).
 */
export const openMongoStores = async (
  url: string,
  clock: Clock,
  options: ConnectOptions & { relaxedNamespaces?: string[] } = {},
): Promise<MongoStores> => {
  const connection = await connectMongo(url, options);
  const startSession = () => connection.client.startSession();
  return {
    connection,
    environment: async (environment) => {
      const db = connection.database(environment);
      return {
        core: MongoReadStore.open(db, startSession),
        analytics: MongoReadStore.open(db, startSession, { prefix: 'analytics_' }),
        kv: await MongoKvStore.open(db, startSession, clock, { relaxedNamespaces: options.relaxedNamespaces }),
        snapshots: new MongoSnapshotStore(db, startSession),
      };
    },
    rateLimitStores: () => mongoRateLimitStores(connection.shared()),
    close: () => connection.close(),
  };
};
