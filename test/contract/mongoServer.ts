/**
 * The MongoDB server the Mongo contract suites run against: MONGODB_URL, when set (a replica
 * set: `docker compose up -d mongo`, then
 * `MONGODB_URL=mongodb://localhost:27017/vouchers?replicaSet=rs0`). No MongoDB server can be
 * installed on the machines this repository is developed and tested on, so without MONGODB_URL
 * each suite is one pending test whose title says why it did not run.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { connectMongo, type MongoConnection } from '../../src/infrastructure/mongo/mongoConnection.ts';

export const MONGODB_URL = process.env.MONGODB_URL;

export const NOT_RUN =
  'not run: no MongoDB server is configured (MONGODB_URL is unset, and none can be installed on this machine; ' +
  'with Docker: docker compose up -d mongo, then MONGODB_URL=mongodb://localhost:27017/vouchers?replicaSet=rs0)';

/** Defines the suite when a server is configured, else a pending test saying why it did not run. */
export function whenMongo(title: string, define: () => void): void {
  if (MONGODB_URL) {
    define();
    return;
  }
  describe(title, function () {
    it(NOT_RUN, function () {
      this.skip();
    });
  });
}

let shared: Promise<MongoConnection> | undefined;

/** One connection for the whole run (closed at exit by mocha's --exit). */
export const mongo = (): Promise<MongoConnection> => (shared ??= connectMongo(MONGODB_URL!));

/** A database of its own for a test; drop it when done. */
export const scratchDatabase = async (prefix: string): Promise<Db> =>
  (await mongo()).client.db(`${prefix}_${randomBytes(5).toString('hex')}`);
