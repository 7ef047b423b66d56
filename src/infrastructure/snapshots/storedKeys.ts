import type Database from 'better-sqlite3';
import { BloomFilter } from 'bloomfilter';
import type { Worker } from 'node:worker_threads';
import { siblingWorkerUrl, spawnWorker } from '../supervisedWorker.ts';

/**
 * Bits of the filter: 8 MB, whatever the file's size. Of the keys never stored, it answers
 * "probably stored" (and the file is read) for about 0.5 % with 4 million keys in the file (two
 * million applications, two keys each), 5 % with 10 million and 20 % with 20 million: past that
 * the lookups it saves fall off, its memory does not grow.
 */
export const FILTER_BITS = 2 ** 26;
/** Hashes per key: the fewest false "probably stored" answers for 8 MB at a few million keys. */
export const FILTER_HASHES = 3;
/** A file with at most this many keys has its filter built at open, on the opening thread (tens of ms). */
export const SYNC_BUILD_KEYS = 50_000;

/** The filter's member for a stream's key (a NUL cannot occur in a stream id). */
const member = (stream: string, key: string): string => `${stream}\u0000${key}`;

/** A filter holding every key of `snapshot_keys` in `db`, read in one transaction. */
export const filterOfFile = (db: Database.Database): BloomFilter => {
  const filter = new BloomFilter(FILTER_BITS, FILTER_HASHES);
  const rows = db.prepare('SELECT stream, key FROM snapshot_keys').raw().iterate() as Iterable<[string, string]>;
  for (const [stream, key] of rows) filter.add(member(stream, key));
  return filter;
};

/**
 * The filter whose buckets the filter's thread built (FILTER_BITS bits, FILTER_HASHES hashes),
 * holding those buckets themselves (the thread transfers their memory): no copy on the thread that
 * serves requests. The package's own constructor from an array copies and checks bucket by bucket,
 * 16–22 ms for 8 MB here; a block copy into the new filter's buckets, 8 ms (the fresh pages' faults).
 */
export const filterOfBuckets = (buckets: Uint32Array): BloomFilter => {
  // its own 8 MB of buckets are allocated untouched (no page is faulted in) and dropped at once
  const filter = new BloomFilter(FILTER_BITS, FILTER_HASHES);
  if (buckets.length !== filter.buckets.length)
    throw new Error(`a filter of ${filter.buckets.length} buckets was expected, got ${buckets.length}`);
  filter.buckets = buckets;
  return filter;
};

/** What the filter's thread sends: the filter's buckets, or why it has none. */
export type StoredKeysMessage = { buckets: Uint32Array } | { failed: string };

export interface StoredKeysOptions {
  /** The database file: a filter of more than SYNC_BUILD_KEYS keys is built from it on a thread of its own. */
  file: string;
  /** About how many keys the file holds: it decides whether the filter is built at once or on a thread. */
  estimate: number;
  /** The background build failed: the store goes on without a filter (every lookup reads the file). */
  onError?(error: Error): void;
}

/**
 * Which (stream, key) pairs a snapshot file may hold: a Bloom filter of every key stored, so that
 * a lookup of a key never stored (a new order's, a new application's: most of the keys an apply
 * names) is answered without reading the file.
 *
 * It never answers "not stored" for a stored key, provided every key written to the file after it
 * was built goes through `add`: the file has one writer, this store's connection (the data
 * directory's lock keeps other processes out). A file of more than SYNC_BUILD_KEYS keys is read on
 * a worker thread while the store serves; until that is done `mightHold` answers true (the file is
 * read), and the keys added meanwhile are kept and added to the filter when it arrives. Nothing is
 * ever removed (snapshot entries are never deleted); a key whose write rolled back stays in the
 * filter, which only costs its lookups a read.
 */
export class StoredKeys {
  private filter: BloomFilter | undefined;
  /** The keys added while the background build runs (undefined: none runs). */
  private pending: string[] | undefined;
  private worker: Worker | undefined;

  private constructor() {}

  /** A filter that holds nothing, for a store that filters nothing: every lookup reads the file. */
  static none(): StoredKeys {
    return new StoredKeys();
  }

  /** The filter of the file open as `db`: built now when the file is small or in memory, else on a worker thread. */
  static of(db: Database.Database, options: StoredKeysOptions): StoredKeys {
    const keys = new StoredKeys();
    if (db.memory || options.estimate <= SYNC_BUILD_KEYS) keys.filter = filterOfFile(db);
    else keys.buildInBackground(options);
    return keys;
  }

  /** False only when the key was never stored. */
  mightHold(stream: string, key: string): boolean {
    return this.filter === undefined || this.filter.test(member(stream, key));
  }

  /** Records a key written to the file. */
  add(stream: string, key: string): void {
    const m = member(stream, key);
    this.filter?.add(m);
    this.pending?.push(m);
  }

  /** Whether the filter is in use (false while it is built on its thread, or when that failed). */
  get ready(): boolean {
    return this.filter !== undefined;
  }

  /** Stops a build under way. */
  close(): void {
    this.pending = undefined;
    void this.worker?.terminate();
    this.worker = undefined;
  }

  private buildInBackground(options: StoredKeysOptions): void {
    // Before the thread starts reading: every key written from now on is in `pending`.
    this.pending = [];
    const worker = spawnWorker(siblingWorkerUrl('storedKeys.worker', import.meta.url), { file: options.file });
    this.worker = worker;
    worker.unref();
    const failed = (error: Error) => {
      if (this.worker !== worker) return;
      this.pending = undefined;
      this.worker = undefined;
      options.onError?.(error);
    };
    worker.once('message', (message: StoredKeysMessage) => {
      if (this.worker !== worker) return;
      if ('failed' in message)
        return failed(new Error(`no filter of the stored keys of ${options.file}: ${message.failed}`));
      let filter: BloomFilter;
      try {
        filter = filterOfBuckets(message.buckets);
      } catch (error) {
        return failed(error as Error);
      }
      for (const m of this.pending!) filter.add(m);
      this.filter = filter;
      this.pending = undefined;
      this.worker = undefined;
    });
    worker.once('error', failed);
    worker.once('exit', (code) =>
      failed(new Error(`the stored keys' thread ended (exit code ${code}) without a filter`)),
    );
  }
}
