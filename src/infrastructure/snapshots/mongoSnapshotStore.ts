/**
 * SnapshotStore on MongoDB, in the environment's database:
 * - `snapshots`: a document per stream, `{_id: stream, revision, core: JSON text}`;
 * - `snapshot_entries`: a document per stream and key, `{_id: JSON [stream, key], value: JSON
 *   text, revision}`.
 * A save reads the stream's document and writes it and the entries in one transaction (so a
 * replica set, as every Mongo store here): two processes saving on the same base conflict, and
 * withTransaction retries the loser, which then finds the revision moved and writes nothing.
 * Values are JSON text, so any key or value round-trips exactly.
 */
import type { ClientSession, Collection, Db } from 'mongodb';
import type { SnapshotStore, StoredEntry } from '../../core/snapshotStore.ts';
import { guarded, inTransaction } from '../mongo/mongoConnection.ts';

interface SnapshotDoc {
  _id: string;
  revision: number;
  core: string;
}

interface EntryDoc {
  _id: string;
  value: string;
  revision: number;
}

export const SNAPSHOTS_COLLECTION = 'snapshots';
export const SNAPSHOT_ENTRIES_COLLECTION = 'snapshot_entries';

const entryId = (streamId: string, key: string): string => JSON.stringify([streamId, key]);

export class MongoSnapshotStore implements SnapshotStore {
  private readonly snapshots: Collection<SnapshotDoc>;
  private readonly stored: Collection<EntryDoc>;

  constructor(
    db: Db,
    private readonly startSession: () => ClientSession,
  ) {
    this.snapshots = db.collection<SnapshotDoc>(SNAPSHOTS_COLLECTION);
    this.stored = db.collection<EntryDoc>(SNAPSHOT_ENTRIES_COLLECTION);
  }

  load(streamId: string): Promise<{ revision: number; core: unknown } | undefined> {
    return guarded(async () => {
      const doc = await this.snapshots.findOne({ _id: streamId });
      return doc ? { revision: doc.revision, core: JSON.parse(doc.core) as unknown } : undefined;
    });
  }

  entries(streamId: string, keys: readonly string[]): Promise<Map<string, StoredEntry>> {
    return guarded(async () => {
      const byId = new Map(keys.map((key) => [entryId(streamId, key), key]));
      const found = new Map<string, StoredEntry>();
      if (byId.size === 0) return found;
      for (const doc of await this.stored.find({ _id: { $in: [...byId.keys()] } }).toArray()) {
        found.set(byId.get(doc._id)!, { value: JSON.parse(doc.value) as unknown, revision: doc.revision });
      }
      return found;
    });
  }

  save(
    streamId: string,
    base: number,
    revision: number,
    core: unknown,
    entries: ReadonlyArray<readonly [string, unknown]>,
  ): Promise<boolean> {
    return inTransaction(this.startSession, async (session) => {
      const stored = await this.snapshots.findOne({ _id: streamId }, { session });
      if ((stored?.revision ?? -1) !== base) return false;
      await this.snapshots.replaceOne(
        { _id: streamId },
        { revision, core: JSON.stringify(core) },
        { upsert: true, session },
      );
      if (entries.length > 0) {
        await this.stored.bulkWrite(
          entries.map(([key, value]) => ({
            replaceOne: {
              filter: { _id: entryId(streamId, key) },
              replacement: { value: JSON.stringify(value ?? null), revision },
              upsert: true,
            },
          })),
          { session, ordered: false },
        );
      }
      return true;
    });
  }

  /** The connection belongs to the service's Mongo stores, which close it. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}
