/**
 * The service's server stores (EVENTSTORE_URL, MONGODB_URL) on the in-memory stand-ins, for tests
 * where no server exists: the EventStoreDB client is FakeEsdbClient, MongoDB is memoryMongo
 * behind a client that openMongoStores accepts (one memory holds every database, each database's
 * collections under its own name). Either server can be taken down and brought back: while down,
 * every call fails as the real client's would when the server is unreachable (EventStoreDB:
 * UnavailableError, and live subscriptions end with it; MongoDB: MongoServerSelectionError).
 */
import { Readable } from 'node:stream';
import { Metadata } from '@grpc/grpc-js';
import { convertToCommandError } from '@eventstore/db-client';
import { MongoServerSelectionError, type ClientSession, type Db, type MongoClient } from 'mongodb';
import { mongoServer, type ServerStores } from '../../src/composition.ts';
import type { EsdbClient } from '../../src/infrastructure/eventStore/esdbEventStore.ts';
import { openMongoStores } from '../../src/infrastructure/mongo/mongoStores.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { FakeEsdbClient } from './fakeEsdbClient.ts';
import { memoryMongo } from './memoryMongo.ts';

/** The client's error for a call on a server that cannot be reached (gRPC status 14). */
export const esdbUnavailable = (): Error =>
  convertToCommandError(
    Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: 14,
      details: 'No connection established',
      metadata: new Metadata(),
    }),
  );

const mongoUnavailable = () => new MongoServerSelectionError('Server selection timed out after 5000 ms', {} as never);

/** An EventStoreDB client that can lose its server. */
export class DownableEsdb {
  down = false;
  readonly fake = new FakeEsdbClient();
  private readonly live = new Set<Readable & { unsubscribe(): Promise<void> }>();

  /** Takes the server away: calls fail, and live subscriptions end with the client's error. */
  lose(): void {
    this.down = true;
    for (const sink of this.live) {
      sink.destroy(esdbUnavailable());
      void sink.unsubscribe().catch(() => {});
    }
    this.live.clear();
  }

  restore(): void {
    this.down = false;
  }

  asClient(): EsdbClient {
    /** A read as the client returns it when the server is unreachable: a stream that errors. */
    const failing = () => {
      const stream = new Readable({ objectMode: true, read() {} });
      setImmediate(() => stream.destroy(esdbUnavailable()));
      return stream;
    };
    const client = {
      appendToStream: (...args: Parameters<FakeEsdbClient['appendToStream']>) =>
        this.down ? Promise.reject(esdbUnavailable()) : this.fake.appendToStream(...args),
      readStream: (...args: Parameters<FakeEsdbClient['readStream']>) =>
        this.down ? failing() : this.fake.readStream(...args),
      readAll: (...args: Parameters<FakeEsdbClient['readAll']>) => (this.down ? failing() : this.fake.readAll(...args)),
      subscribeToAll: (...args: Parameters<FakeEsdbClient['subscribeToAll']>) => {
        if (this.down) return Object.assign(failing(), { unsubscribe: async () => {} });
        const sink = this.fake.subscribeToAll(...args);
        this.live.add(sink);
        return sink;
      },
      dispose: () => this.fake.dispose(),
    };
    return client as unknown as EsdbClient;
  }
}

/** MongoDB in memory, every database in one memory; `down` makes every call fail as an unreachable server's. */
export class DownableMongo {
  down = false;
  readonly memory = memoryMongo();
  /** Names of the databases the stores asked for. */
  readonly databases = new Set<string>();

  lose(): void {
    this.down = true;
  }

  restore(): void {
    this.down = false;
  }

  /** The collection `name` of database `database`, failing while the server is down. */
  private database(database: string): Db {
    this.databases.add(database);
    return {
      collection: (name: string) =>
        new Proxy(this.memory.db.collection(`${database}.${name}`), {
          get: (target, prop, receiver) => {
            const value = Reflect.get(target, prop, receiver) as unknown;
            if (typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              if (this.down) throw mongoUnavailable();
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }),
    } as unknown as Db;
  }

  /** A client as openMongoStores's `createClient` builds it: a replica set member. */
  client(): MongoClient {
    const session = this.memory.startSession();
    const startSession = () =>
      ({
        withTransaction: (work: (s: ClientSession) => Promise<unknown>) =>
          this.down ? Promise.reject(mongoUnavailable()) : session.withTransaction(work),
        endSession: () => session.endSession(),
      }) as unknown as ClientSession;
    return {
      connect: async () => {
        if (this.down) throw mongoUnavailable();
      },
      db: (name: string) => (name === 'admin' ? { command: async () => ({ setName: 'rs0' }) } : this.database(name)),
      startSession,
      close: async () => {},
    } as unknown as MongoClient;
  }
}

/** Both servers, connected as openServers connects them (MONGODB_URL's database `vouchers`). */
export const fakeServers = async (
  clock: Clock,
): Promise<{ servers: ServerStores & { close(): Promise<void> }; esdb: DownableEsdb; mongo: DownableMongo }> => {
  const esdb = new DownableEsdb();
  const mongo = new DownableMongo();
  const stores = await openMongoStores('mongodb://127.0.0.1:27017/vouchers?replicaSet=rs0', clock, {
    createClient: () => mongo.client(),
    relaxedNamespaces: ['quotes'],
  });
  const onMongo = mongoServer(stores, clock);
  return {
    esdb,
    mongo,
    servers: {
      eventStore: esdb.asClient(),
      mongo: onMongo,
      close: async () => {
        await esdb.fake.dispose();
        await onMongo.close();
      },
    },
  };
};
