import net from 'node:net';
import { expect } from 'chai';
import sinon from 'sinon';
import {
  MongoClient,
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
  type ClientSession,
} from 'mongodb';
import { StoreUnavailableError } from '../../src/core/storeUnavailable.ts';
import { MongoKvStore } from '../../src/infrastructure/kvStore/mongoKvStore.ts';
import { MongoReadStore } from '../../src/infrastructure/readStore/mongoReadStore.ts';
import { FakeClock } from '../support/fakeClock.ts';
import {
  connectMongo,
  databaseBaseName,
  guarded,
  inTransaction,
  isUnavailable,
  TRANSACTION_RETRY_MS,
  storeError,
} from '../../src/infrastructure/mongo/mongoConnection.ts';

const serverError = (code: number, labels: string[] = []) =>
  new MongoServerError({ message: `code ${code}`, code, errorLabels: labels });

describe('MongoDB connection', function () {
  describe('error mapping', function () {
    const unavailable: Array<[string, Error]> = [
      ['MongoServerSelectionError', new MongoServerSelectionError('selection timed out', {} as never)],
      ['MongoNetworkError', new MongoNetworkError('connection reset')],
      ['MongoNetworkTimeoutError', new MongoNetworkTimeoutError('socket timed out')],
      ['MongoNotConnectedError', new MongoNotConnectedError('not connected')],
      ['MongoTopologyClosedError', new MongoTopologyClosedError()],
      ['MongoServerClosedError', new MongoServerClosedError()],
      ['MongoClientClosedError', new MongoClientClosedError()],
      ['MongoOperationTimeoutError', new MongoOperationTimeoutError('timed out')],
      ['a RetryableWriteError', serverError(1, ['RetryableWriteError'])],
      ['NotWritablePrimary (10107)', serverError(10107)],
      ['PrimarySteppedDown (189)', serverError(189)],
      ['ShutdownInProgress (91)', serverError(91)],
      ['InterruptedAtShutdown (11600)', serverError(11600)],
      ['InterruptedDueToReplStateChange (11602)', serverError(11602)],
      ['HostUnreachable (6)', serverError(6)],
      ['NetworkTimeout (89)', serverError(89)],
    ];
    for (const [what, err] of unavailable) {
      it(`${what} is StoreUnavailableError("mongodb") with the driver error as its cause`, async function () {
        expect(isUnavailable(err)).to.equal(true);
        const mapped = await guarded(() => Promise.reject(err)).catch((e: unknown) => e);
        expect(mapped).to.be.instanceOf(StoreUnavailableError);
        expect(mapped).to.include({ store: 'mongodb', cause: err, name: 'StoreUnavailableError' });
      });
    }

    it('a MongoBulkWriteError wrapping a lost connection is StoreUnavailableError; one of write errors is not', function () {
      const lost = new MongoBulkWriteError(new MongoNetworkError('connection reset') as never, {} as never);
      expect(isUnavailable(lost)).to.equal(true);
      const duplicate = new MongoBulkWriteError(
        { message: 'E11000', code: 11000, writeErrors: [] } as never,
        {} as never,
      );
      expect(isUnavailable(duplicate)).to.equal(false);
    });

    const passedThrough: Array<[string, Error]> = [
      ['a duplicate key (11000)', serverError(11000)],
      ['a write conflict (112)', serverError(112, ['TransientTransactionError'])],
      ['a bad query (2)', serverError(2)],
      [
        'MongoWriteConcernError',
        new MongoWriteConcernError({ writeConcernError: { errmsg: 'wtimeout', code: 64 } } as never),
      ],
      ['MongoInvalidArgumentError', new MongoInvalidArgumentError('bad argument')],
      ['a plain Error', new Error('bug')],
    ];
    for (const [what, err] of passedThrough) {
      it(`${what} is thrown as it is`, async function () {
        expect(isUnavailable(err)).to.equal(false);
        expect(storeError(err)).to.equal(err);
        expect(await guarded(() => Promise.reject(err)).catch((e: unknown) => e)).to.equal(err);
      });
    }
  });

  describe('inTransaction', function () {
    /** A session whose withTransaction runs the callback again while it fails with a transient error, as the driver's does. */
    const retryingSession = () => {
      const endSession = sinon.stub().resolves();
      const withTransaction = sinon.spy(async (fn: (s: unknown) => Promise<unknown>, _options?: unknown) => {
        for (;;) {
          try {
            return await fn(session);
          } catch (err) {
            if (!(err instanceof MongoServerError && err.hasErrorLabel('TransientTransactionError'))) throw err;
          }
        }
      });
      const session = { withTransaction, endSession } as unknown as ClientSession;
      return { session, withTransaction, endSession };
    };

    it("answers the work's result, passes the options and ends the session", async function () {
      const { session, withTransaction, endSession } = retryingSession();
      expect(
        await inTransaction(
          () => session,
          async () => 42,
          { writeConcern: { w: 1 } },
        ),
      ).to.equal(42);
      expect(withTransaction.firstCall.args[1]).to.deep.equal({ writeConcern: { w: 1 } });
      expect(endSession.calledOnce).to.equal(true);
    });

    it(`stops retrying transient errors after ${TRANSACTION_RETRY_MS} ms with StoreUnavailableError`, async function () {
      const { session, endSession } = retryingSession();
      let clock = 0;
      const work = sinon.spy(async () => {
        clock += 4_000;
        throw serverError(112, ['TransientTransactionError']);
      });
      const err = await inTransaction(
        () => session,
        work,
        {},
        () => clock,
      ).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(StoreUnavailableError);
      expect(work.callCount).to.equal(3); // at 0, 4 s and 8 s; the attempt at 12 s is refused
      expect(endSession.calledOnce).to.equal(true);
    });

    it('a write conflict that clears within the budget commits', async function () {
      const { session } = retryingSession();
      const work = sinon.stub();
      work.onFirstCall().rejects(serverError(112, ['TransientTransactionError']));
      work.onSecondCall().resolves('done');
      expect(await inTransaction(() => session, work)).to.equal('done');
    });
  });

  describe('databaseBaseName', function () {
    it('takes the database of the URL, or "vouchers"', function () {
      expect(databaseBaseName('mongodb://localhost:27017')).to.equal('vouchers');
      expect(databaseBaseName('mongodb://localhost:27017/')).to.equal('vouchers');
      expect(databaseBaseName('mongodb://u:p%2Fw@h1:1,h2:2/shop?replicaSet=rs0')).to.equal('shop');
      expect(databaseBaseName('mongodb+srv://cluster.example.com/shop_eu')).to.equal('shop_eu');
      expect(databaseBaseName('mongodb://h/?replicaSet=rs0')).to.equal('vouchers');
    });

    it('refuses a name MongoDB or the environment suffix cannot take, naming MONGODB_URL', function () {
      for (const bad of ['mongodb://h/a.b', 'mongodb://h/a%20b', `mongodb://h/${'x'.repeat(49)}`]) {
        expect(() => databaseBaseName(bad)).to.throw(/^MONGODB_URL: the database name/);
      }
    });
  });

  describe('connectMongo', function () {
    const URL = 'mongodb://admin:s3cret@db.internal:27017/shop?replicaSet=rs0';

    const stubClient = (hello: Record<string, unknown> | Error) => {
      const command = hello instanceof Error ? sinon.stub().rejects(hello) : sinon.stub().resolves({ ok: 1, ...hello });
      const db = sinon.stub().returns({ command });
      const client = { connect: sinon.stub().resolves(), db, close: sinon.stub().resolves() };
      return { client, command, db, create: sinon.stub().returns(client as unknown as MongoClient) };
    };

    it('connects, checks for a replica set and gives each environment its own database', async function () {
      const { client, command, db, create } = stubClient({ setName: 'rs0', isWritablePrimary: true });
      const connection = await connectMongo(URL, { createClient: create });
      expect(create.firstCall.args).to.deep.equal([URL, { serverSelectionTimeoutMS: 5_000 }]);
      expect(client.connect.calledOnce).to.equal(true);
      expect(db.firstCall.args).to.deep.equal(['admin']);
      expect(command.firstCall.args).to.deep.equal([{ hello: 1 }]);
      connection.database('sandbox');
      connection.database('production');
      connection.shared();
      expect(db.args.slice(1)).to.deep.equal([['shop_sandbox'], ['shop_production'], ['shop']]);
      await connection.close();
      expect(client.close.calledOnce).to.equal(true);
    });

    it('keeps a serverSelectionTimeoutMS the URL sets; accepts a mongos', async function () {
      const { create } = stubClient({ msg: 'isdbgrid' });
      await connectMongo('mongodb://h/?serverSelectionTimeoutMS=100', { createClient: create });
      expect(create.firstCall.args[1]).to.deep.equal({});
    });

    it('an unreachable server: an error naming MONGODB_URL, without the password, client closed', async function () {
      const { client, create } = stubClient(
        new MongoServerSelectionError('connect ECONNREFUSED 10.0.0.9:27017', {} as never),
      );
      const err = (await connectMongo(URL, { createClient: create }).catch((e: unknown) => e)) as Error;
      expect(err.message).to.match(/^MONGODB_URL: cannot reach the MongoDB server \(connect ECONNREFUSED/);
      expect(err.message).not.to.include('s3cret');
      expect(client.close.calledOnce).to.equal(true);
    });

    it('a standalone mongod: refused at start, as transactions need a replica set', async function () {
      const { client, create } = stubClient({ isWritablePrimary: true });
      const err = (await connectMongo(URL, { createClient: create }).catch((e: unknown) => e)) as Error;
      expect(err.message).to.match(/^MONGODB_URL: the server is a standalone mongod; .* replica set/);
      expect(client.close.calledOnce).to.equal(true);
    });

    it('a URL that is not a MongoDB connection string never reaches the driver and is not echoed', async function () {
      const { create } = stubClient({ setName: 'rs0' });
      for (const bad of ['postgres://u:s3cret@h/db', 'localhost:27017', '', 'mongodb://']) {
        const err = (await connectMongo(bad, { createClient: create }).catch((e: unknown) => e)) as Error;
        expect(err.message).to.equal('MONGODB_URL must be a mongodb:// or mongodb+srv:// connection string');
      }
      expect(create.called).to.equal(false);
      const parseFailure = sinon.stub().throws(new MongoParseError('Invalid scheme'));
      const err = (await connectMongo('mongodb://h:1/db', { createClient: parseFailure }).catch(
        (e: unknown) => e,
      )) as Error;
      expect(err.message).to.equal('MONGODB_URL is not a valid MongoDB connection string: Invalid scheme');
    });

    it('the real driver refuses a malformed URL with the same message shape', async function () {
      const err = (await connectMongo('mongodb://u:p@h:notaport/db').catch((e: unknown) => e)) as Error;
      expect(err.message).to.match(/^MONGODB_URL is not a valid MongoDB connection string: /);
      expect(err.message).not.to.include('u:p@');
    });
  });
});

describe('MongoDB stores with the real driver and no server', function () {
  /** A loopback port nothing listens on: taken, then released. */
  const closedPort = async (): Promise<number> => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    return port;
  };

  it('connectMongo stops with a message naming MONGODB_URL and the reason', async function () {
    const port = await closedPort();
    const err = (await connectMongo(`mongodb://admin:s3cret@127.0.0.1:${port}/shop?serverSelectionTimeoutMS=300`).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err.message).to.match(/^MONGODB_URL: cannot reach the MongoDB server \(.*ECONNREFUSED/);
    expect(err.message).not.to.include('s3cret');
  });

  it('an operation on a server that is gone is StoreUnavailableError, from every store', async function () {
    const port = await closedPort();
    const client = new MongoClient(`mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300`);
    try {
      const db = client.db('shop_sandbox');
      const reads = MongoReadStore.open(db, () => client.startSession());
      const kv = await MongoKvStore.open(db, () => client.startSession(), new FakeClock()).catch((e: unknown) => e);
      expect(kv).to.be.instanceOf(StoreUnavailableError);
      for (const attempt of [
        reads.get('vouchers', 'v1'),
        reads.writeBatch({ upserts: [{ collection: 'vouchers', doc: { id: 'v1' } }] }),
      ]) {
        const err = await attempt.catch((e: unknown) => e);
        expect(err).to.be.instanceOf(StoreUnavailableError);
        // the first operation's auto-connect fails on server selection and the driver closes the
        // topology it opened; later ones meet the closed topology (a bulk write wraps that error)
        expect(isUnavailable((err as StoreUnavailableError).cause)).to.equal(true);
      }
    } finally {
      await client.close();
    }
  });
});
