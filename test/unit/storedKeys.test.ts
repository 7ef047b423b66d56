/**
 * The filter of stored snapshot keys (storedKeys.ts) and SqliteSnapshotStore's use of it: a key
 * never stored is answered without reading the file, a stored key is never missed (those in the
 * file when it opens, small or read on the filter's thread, and those written meanwhile), and a
 * filter that cannot be built leaves every lookup to the file.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { SqliteSnapshotStore } from '../../src/infrastructure/snapshots/sqliteSnapshotStore.ts';
import { BloomFilter } from 'bloomfilter';
import {
  FILTER_BITS,
  FILTER_HASHES,
  filterOfBuckets,
  StoredKeys,
  SYNC_BUILD_KEYS,
} from '../../src/infrastructure/snapshots/storedKeys.ts';
import { tempFileEach } from '../support/tempFiles.ts';

/** Waits until `done()` holds, polling every 10 ms, for at most 20 s. */
const until = async (done: () => boolean): Promise<void> => {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > 20_000) throw new Error('still not done after 20 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('Stored snapshot keys filter', () => {
  const file = tempFileEach('stored-keys-', 'snapshots.db');

  /** Writes `count` keys `o:<i>` of stream `big` (values `i`) to the file, beside the store's connection. */
  const writeBehind = (count: number, stream = 'big'): void => {
    const db = new Database(file());
    try {
      db.exec(`
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${count})
        INSERT INTO snapshot_values (id, value, revision)
          SELECT (SELECT coalesce(max(id), 0) FROM snapshot_values) + i + 1, i, 1 FROM n;`);
      db.exec(`
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${count})
        INSERT INTO snapshot_keys (stream, key, value_id)
          SELECT '${stream}', 'o:' || i, (SELECT max(id) FROM snapshot_values) - ${count} + i + 1 FROM n;`);
    } finally {
      db.close();
    }
  };

  /** A store, closed again, so that the file has the schema. */
  const createFile = async (): Promise<void> => {
    await SqliteSnapshotStore.open(file()).close();
  };

  it('answers a key never stored without reading the file: a key written behind its back is not seen', async () => {
    const store = SqliteSnapshotStore.open(file());
    try {
      expect(store.filtering).to.equal(true);
      await store.save('s', -1, 3, { n: 1 }, [['o:1', 'va_1']]);
      writeBehind(1, 's'); // key o:0 of stream s, written by another connection
      const found = await store.entries('s', ['o:1', 'o:0', 'o:2']);
      expect([...found.keys()]).to.deep.equal(['o:1']);
      expect(found.get('o:1')).to.deep.equal({ value: 'va_1', revision: 3 });
    } finally {
      await store.close();
    }
  });

  it('holds every key of a small file from the moment it opens', async () => {
    await createFile();
    writeBehind(2_000);
    const store = SqliteSnapshotStore.open(file());
    try {
      expect(store.filtering).to.equal(true);
      const keys = Array.from({ length: 2_000 }, (_, i) => `o:${i}`);
      const found = await store.entries('big', keys);
      expect(found.size).to.equal(2_000);
      expect(found.get('o:1999')).to.deep.equal({ value: 1999, revision: 1 });
    } finally {
      await store.close();
    }
  });

  it('reads a large file on its thread, and misses neither its keys nor those written meanwhile', async function () {
    this.timeout(60_000);
    await createFile();
    const count = SYNC_BUILD_KEYS + 20_000;
    writeBehind(count);
    const store = SqliteSnapshotStore.open(file());
    try {
      expect(store.filtering, 'a large file is read on a thread').to.equal(false);
      // Before the filter is there, every lookup reads the file.
      expect((await store.entries('big', ['o:7'])).size).to.equal(1);
      // Keys written all the while the thread reads, every 5 ms: those written after its read
      // began reach the filter only through what the store kept for it.
      let revision = -1;
      const save = async () => {
        const next = revision + 1;
        expect(await store.save('new', revision, next, { n: next }, [[`o:${next}`, `va_${next}`]])).to.equal(true);
        revision = next;
      };
      while (!store.filtering) {
        await save();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await save();
      expect(revision).to.be.above(3);
      const all = await store.entries(
        'big',
        Array.from({ length: count }, (_, i) => `o:${i}`),
      );
      expect(all.size).to.equal(count);
      const saved = Array.from({ length: revision + 1 }, (_, i) => `o:${i}`);
      const fresh = await store.entries('new', [...saved, 'o:never']);
      expect([...fresh.keys()]).to.deep.equal(saved);
      expect(fresh.get(`o:${revision}`)).to.deep.equal({ value: `va_${revision}`, revision });
    } finally {
      await store.close();
    }
  });

  it('answers "never stored" for nearly every key it was not given', async () => {
    const db = new Database(':memory:');
    db.exec(
      'CREATE TABLE snapshot_keys (stream TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (stream, key)) WITHOUT ROWID',
    );
    const insert = db.prepare('INSERT INTO snapshot_keys VALUES (?, ?)');
    for (let i = 0; i < 10_000; i++) insert.run(`voucher-${i % 100}`, `o:${i}`);
    const keys = StoredKeys.of(db, { file: ':memory:', estimate: 10_000 });
    db.close();
    for (let i = 0; i < 10_000; i++) expect(keys.mightHold(`voucher-${i % 100}`, `o:${i}`)).to.equal(true);
    let wrong = 0;
    for (let i = 10_000; i < 20_000; i++) if (keys.mightHold(`voucher-${i % 100}`, `o:${i}`)) wrong++;
    expect(wrong).to.be.below(10); // about 0 expected at 10,000 keys in 8 MB
    keys.add('voucher-1', 'o:20001');
    expect(keys.mightHold('voucher-1', 'o:20001')).to.equal(true);
    expect(keys.mightHold('voucher-2', 'o:20001'), 'the stream is part of the key').to.equal(false);
  });

  it("takes the thread's buckets as they are, and refuses buckets of another size", () => {
    const built = new BloomFilter(FILTER_BITS, FILTER_HASHES);
    const keys = Array.from({ length: 1_000 }, (_, i) => `v_${i}\u0000o:order_${i}`);
    for (const key of keys) built.add(key);
    const filter = filterOfBuckets(built.buckets);
    expect(keys.filter((key) => !filter.test(key))).to.deep.equal([]);
    expect(Buffer.compare(Buffer.from(filter.buckets.buffer), Buffer.from(built.buckets.buffer))).to.equal(0);
    expect(() => filterOfBuckets(new Uint32Array(FILTER_BITS / 64))).to.throw(/buckets was expected/);
  });

  it('leaves every lookup to the file when its thread cannot build the filter', async () => {
    // A file said to be large is read on the thread, which finds no file there.
    const db = new Database(file());
    const errors: Error[] = [];
    const keys = StoredKeys.of(db, {
      file: `${file()}.missing`,
      estimate: SYNC_BUILD_KEYS + 1,
      onError: (error) => errors.push(error),
    });
    try {
      await until(() => errors.length > 0);
      expect(errors[0]!.message).to.match(/unable to open|does not exist|no such file/i);
      expect(keys.ready).to.equal(false);
      expect(keys.mightHold('any', 'o:1')).to.equal(true);
      keys.add('any', 'o:2'); // nothing pending is kept once the build failed
      expect(keys.mightHold('other', 'o:3')).to.equal(true);
    } finally {
      keys.close();
      db.close();
    }
  });
});
