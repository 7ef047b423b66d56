/**
 * The MongoDB client the Mongo stores share: connected and checked at start from MONGODB_URL,
 * one database per environment, and the mapping of the driver's connection errors to
 * StoreUnavailableError.
 */
import type * as Mongodb from 'mongodb';
import type { ClientSession, Db, MongoClient, MongoClientOptions, TransactionOptions } from 'mongodb';
import { lazyPackage } from '../../core/lazyPackage.ts';
import { StoreUnavailableError } from '../../core/storeUnavailable.ts';
import { assertMongoUrl, databaseBaseName } from './mongoUrl.ts';

export { databaseBaseName };

/** The driver, loaded when a MongoDB store is first used. */
export const mongodb = lazyPackage<typeof Mongodb>('mongodb');

/** The name StoreUnavailableError carries for the MongoDB stores. */
export const MONGO_STORE = 'mongodb';

/** How long an operation waits for a reachable server unless MONGODB_URL says otherwise. */
export const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 5_000;

/**
 * Server error codes that mean the server, or the replica set's primary, is not there right
 * now: HostUnreachable, HostNotFound, NetworkTimeout, ShutdownInProgress, PrimarySteppedDown,
 * NotWritablePrimary, InterruptedAtShutdown, InterruptedDueToReplStateChange,
 * NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary.
 */
const UNAVAILABLE_CODES = new Set([6, 7, 89, 91, 189, 10107, 11600, 11602, 13435, 13436]);

/**
 * Whether a driver error means "the server cannot be reached now" rather than a bad operation.
 * A bulk write wraps a driver error it met before any write result (a lost connection) in a
 * MongoBulkWriteError that keeps it as `errorResponse`: that one is looked at.
 */
export const isUnavailable = (err: unknown): boolean => {
  const driver = mongodb();
  return (
    (err instanceof driver.MongoBulkWriteError &&
      err.errorResponse instanceof Error &&
      isUnavailable(err.errorResponse)) ||
    err instanceof driver.MongoServerSelectionError ||
    err instanceof driver.MongoNetworkError ||
    err instanceof driver.MongoNotConnectedError ||
    err instanceof driver.MongoTopologyClosedError ||
    err instanceof driver.MongoServerClosedError ||
    err instanceof driver.MongoClientClosedError ||
    err instanceof driver.MongoOperationTimeoutError ||
    (err instanceof driver.MongoError &&
      (err.hasErrorLabel('RetryableWriteError') || (typeof err.code === 'number' && UNAVAILABLE_CODES.has(err.code))))
  );
};

/** The error to throw for a driver error: StoreUnavailableError when the server is unreachable, else the error itself. */
export const storeError = (err: unknown): unknown =>
  isUnavailable(err) ? new StoreUnavailableError(MONGO_STORE, err) : err;

/**
 * How long a transaction is tried again on transient errors (write conflicts, a lost primary)
 * before it fails: withTransaction alone would go on for 120 s, and the writes waiting on it
 * are requests.
 */
export const TRANSACTION_RETRY_MS = 10_000;

/**
 * Runs `work` in a transaction on a session of its own (withTransaction: retried from the
 * start on transient errors, for at most TRANSACTION_RETRY_MS, then StoreUnavailableError).
 */
export const inTransaction = async <T>(
  startSession: () => ClientSession,
  work: (session: ClientSession) => Promise<T>,
  options: TransactionOptions = {},
  now: () => number = Date.now,
): Promise<T> =>
  guarded(async () => {
    const session = startSession();
    const started = now();
    let attempts = 0;
    try {
      return await session.withTransaction(async (s) => {
        attempts += 1;
        if (attempts > 1 && now() - started > TRANSACTION_RETRY_MS) {
          throw new StoreUnavailableError(MONGO_STORE, new Error(`transaction retried for ${now() - started} ms`));
        }
        return work(s);
      }, options);
    } finally {
      await session.endSession();
    }
  });

/** Runs a driver operation, mapping its connection errors to StoreUnavailableError. */
export const guarded = async <T>(operation: () => Promise<T>): Promise<T> => {
  try {
    return await operation();
  } catch (err) {
    throw storeError(err);
  }
};

export interface MongoConnection {
  readonly client: MongoClient;
  /** The environment's own database: sandbox and production never share one. */
  database(environment: 'sandbox' | 'production'): Db;
  /** The database of what the whole process shares across environments (rate-limit counters), `<name>` itself. */
  shared(): Db;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** Builds the client (tests pass a stub); defaults to `new MongoClient(url, options)`. */
  createClient?: (url: string, options: MongoClientOptions) => MongoClient;
}

/**
 * Connects to MONGODB_URL and checks the server before the service starts: reachable, and a
 * replica set member or a mongos (the stores write in transactions, which a standalone mongod
 * does not have). Any failure is an Error naming MONGODB_URL; the URL itself, which may hold a
 * password, is never in the message.
 */
export const connectMongo = async (url: string, options: ConnectOptions = {}): Promise<MongoConnection> => {
  assertMongoUrl(url);
  const base = databaseBaseName(url);
  const clientOptions: MongoClientOptions = /[?&]serverSelectionTimeoutMS=/i.test(url)
    ? {}
    : { serverSelectionTimeoutMS: DEFAULT_SERVER_SELECTION_TIMEOUT_MS };
  let client: MongoClient;
  try {
    client = (options.createClient ?? ((u, o) => new (mongodb().MongoClient)(u, o)))(url, clientOptions);
  } catch (err) {
    throw new Error(`MONGODB_URL is not a valid MongoDB connection string: ${(err as Error).message}`, { cause: err });
  }
  let hello: { setName?: string; msg?: string };
  try {
    await client.connect();
    hello = (await client.db('admin').command({ hello: 1 })) as typeof hello;
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new Error(`MONGODB_URL: cannot reach the MongoDB server (${(err as Error).message})`, { cause: err });
  }
  if (!hello.setName && hello.msg !== 'isdbgrid') {
    await client.close().catch(() => undefined);
    throw new Error(
      'MONGODB_URL: the server is a standalone mongod; the MongoDB stores write in transactions, which need a ' +
        'replica set (one node is enough: start mongod with --replSet rs0, then run rs.initiate() once)',
    );
  }
  return {
    client,
    database: (environment) => client.db(`${base}_${environment}`),
    shared: () => client.db(base),
    close: () => client.close(),
  };
};
