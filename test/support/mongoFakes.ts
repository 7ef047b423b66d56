/**
 * Sinon fakes at the MongoDB driver boundary: a Db whose collections are stubs, and a session
 * whose withTransaction runs its callback once with itself, so unit tests see every call an
 * adapter makes and its arguments, and can make any call fail with any driver error.
 */
import sinon from 'sinon';
import type { ClientSession, Db, MongoClient } from 'mongodb';

export interface FakeCursor {
  sort: sinon.SinonStub;
  skip: sinon.SinonStub;
  limit: sinon.SinonStub;
  toArray: sinon.SinonStub;
}

export interface FakeCollection {
  createIndex: sinon.SinonStub;
  findOne: sinon.SinonStub;
  find: sinon.SinonStub;
  aggregate: sinon.SinonStub;
  countDocuments: sinon.SinonStub;
  replaceOne: sinon.SinonStub;
  updateOne: sinon.SinonStub;
  deleteOne: sinon.SinonStub;
  deleteMany: sinon.SinonStub;
  bulkWrite: sinon.SinonStub;
  findOneAndUpdate: sinon.SinonStub;
  /** The cursor find and aggregate answer (its toArray gives `rows`). */
  cursor: FakeCursor;
}

export const fakeCursor = (rows: unknown[] = []): FakeCursor => {
  const cursor = {} as FakeCursor;
  cursor.sort = sinon.stub().returns(cursor);
  cursor.skip = sinon.stub().returns(cursor);
  cursor.limit = sinon.stub().returns(cursor);
  cursor.toArray = sinon.stub().resolves(rows);
  return cursor;
};

export const fakeCollection = (): FakeCollection => {
  const cursor = fakeCursor();
  return {
    createIndex: sinon.stub().resolves('index'),
    findOne: sinon.stub().resolves(null),
    find: sinon.stub().returns(cursor),
    aggregate: sinon.stub().returns(cursor),
    countDocuments: sinon.stub().resolves(0),
    replaceOne: sinon.stub().resolves({ matchedCount: 0, upsertedCount: 1 }),
    updateOne: sinon.stub().resolves({ matchedCount: 1, modifiedCount: 1 }),
    deleteOne: sinon.stub().resolves({ deletedCount: 1 }),
    deleteMany: sinon.stub().resolves({ deletedCount: 0 }),
    bulkWrite: sinon.stub().resolves({}),
    findOneAndUpdate: sinon.stub().resolves(null),
    cursor,
  };
};

export interface FakeDb {
  db: Db;
  /** The collection stub of that name (made on first use). */
  collection(name: string): FakeCollection;
  collectionNames(): string[];
}

export const fakeDb = (): FakeDb => {
  const collections = new Map<string, FakeCollection>();
  const collection = (name: string): FakeCollection => {
    let c = collections.get(name);
    if (!c) collections.set(name, (c = fakeCollection()));
    return c;
  };
  return {
    db: { collection: sinon.spy((name: string) => collection(name)) } as unknown as Db,
    collection,
    collectionNames: () => [...collections.keys()],
  };
};

export interface FakeSession {
  session: ClientSession;
  withTransaction: sinon.SinonSpy;
  endSession: sinon.SinonStub;
}

/** A session whose withTransaction runs the callback once, passing itself, and answers its result. */
export const fakeSession = (): FakeSession => {
  const session = {} as ClientSession & Record<string, unknown>;
  const withTransaction = sinon.spy(async (fn: (s: ClientSession) => Promise<unknown>) => fn(session));
  const endSession = sinon.stub().resolves();
  Object.assign(session, { withTransaction, endSession });
  return { session, withTransaction, endSession };
};

/** A client whose startSession gives `session`, for stores that take the client. */
export const fakeClient = (db: FakeDb, session: FakeSession): MongoClient =>
  ({ db: () => db.db, startSession: sinon.stub().returns(session.session) }) as unknown as MongoClient;
