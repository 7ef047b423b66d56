/**
 * Snapshots of aggregates whose history grows without bound (a voucher applied millions of
 * times), so that loading one costs neither the whole stream nor memory for every application.
 *
 * A snapshot of a stream at `revision` has two parts:
 * - the **core**: the aggregate's bounded state (a voucher's terms, status and usage count);
 * - **entries**: keyed values (an application by id, the live application of an order, a
 *   customer's uses), each written with the revision of the snapshot that last wrote it. A loader
 *   fetches only the keys a command or an event needs.
 *
 * Snapshots are derived data: they can be deleted at any time (the next load folds the stream from
 * its start and writes them again) and a lost write only means a longer fold. A snapshot is only
 * ever extended by the one that writes on top of it: `save` compares the stored revision with the
 * one the writer started from, so two processes cannot interleave their entries. Entries are never
 * deleted: a value that went back to nothing (a rolled back order, a customer at 0 uses) is stored
 * as such, so a reader holding an older snapshot sees that the entry moved past it.
 */
export interface SnapshotStore {
  /** The stream's snapshot core and its revision; undefined when there is none. */
  load(streamId: string): Promise<{ revision: number; core: unknown } | undefined>;
  /**
   * The stored entries of these keys, each with the revision of the snapshot that wrote it; a key
   * never written is absent from the answer.
   */
  entries(streamId: string, keys: readonly string[]): Promise<Map<string, StoredEntry>>;
  /**
   * Writes the snapshot at `revision`: the core, and these entries stamped with `revision`, in
   * one atomic write, provided the stored snapshot is still at `base` (-1: none). Answers whether
   * it wrote.
   */
  save(
    streamId: string,
    base: number,
    revision: number,
    core: unknown,
    entries: ReadonlyArray<readonly [string, unknown]>,
  ): Promise<boolean>;
  close(): Promise<void>;
}

/** An entry as stored: its value (`null`: nothing) and the revision of the snapshot that wrote it. */
export interface StoredEntry {
  value: unknown;
  revision: number;
}

/**
 * What the command handler needs of an aggregate to keep it as a bounded core plus keyed entries
 * loaded on demand (the aggregate's domain provides it). A state built by these functions is
 * **partial**: its keyed parts hold only the keys loaded or changed since its snapshot; the
 * handler loads every key an event or a decision touches before folding or deciding.
 */
export interface SnapshotCodec<E, S> {
  /** The keys an event changes when it is folded. */
  eventKeys(event: E): readonly string[];
  /** The bounded part of the state, JSON-serialisable. */
  core(state: S): unknown;
  /** A partial state from a stored core (no keyed entries loaded). */
  fromCore(core: unknown): S;
  /** The state's values for these keys (null: nothing), to store. */
  entries(state: S, keys: Iterable<string>): Array<[string, unknown]>;
  /** The partial state with these stored values loaded (keys with no stored value: none). */
  withEntries(state: S, entries: ReadonlyArray<readonly [string, unknown]>): S;
  /** The partial state without any keyed entry: its core only. */
  withoutEntries(state: S): S;
}

/** How the command handler snapshots an aggregate: where, how, and after how many events. */
export interface Snapshotting<E, S> {
  store: SnapshotStore;
  codec: SnapshotCodec<E, S>;
  /** Events folded since the last snapshot after which the handler writes a new one. */
  every: number;
  /**
   * Events the cached aggregates may hold since their snapshots, all together (default
   * DEFAULT_SNAPSHOT_HELD_EVENTS): with many aggregates cached, each is snapshotted after its share
   * of this (`snapshotAfter`), so that what the cache holds does not grow with the number of
   * aggregates in use.
   */
  held?: number;
}

/**
 * Events between two snapshots of an aggregate, by default: a cached voucher then holds at most
 * about a hundred applications' entries (a thousand vouchers in use, a hundred thousand), a load
 * folds fewer than a hundred events, and a snapshot's write (one transaction of the entries those
 * events changed) comes once per hundred events of the stream.
 */
export const DEFAULT_SNAPSHOT_EVERY = 100;

/**
 * Events the cached vouchers hold since their snapshots, all together, by default: at most about
 * 10,000 applications' entries, whatever the number of vouchers in use (decision 067). What they
 * hold is live data that each full collection of the main thread's heap marks, so the budget also
 * sets how long those collections take (decision 107).
 */
export const DEFAULT_SNAPSHOT_HELD_EVENTS = 10_000;

/** The fewest events between two snapshots of one aggregate, however many are cached. */
export const MIN_EVENTS_BETWEEN_SNAPSHOTS = 4;

/**
 * After how many events since its last snapshot an aggregate is snapshotted, with `cached`
 * aggregates in the cache: `every`, or less when `cached` aggregates holding `every` events each
 * would hold more than `held` in all; never less than MIN_EVENTS_BETWEEN_SNAPSHOTS.
 */
export const snapshotAfter = (every: number, held: number, cached: number): number =>
  Math.min(every, Math.max(MIN_EVENTS_BETWEEN_SNAPSHOTS, Math.floor(held / Math.max(1, cached))));

/**
 * A stream's phase among `interval` ones: its id's 32-bit FNV-1a hash (over UTF-16 code units)
 * modulo `interval`. The same in every process, and spread evenly over the phases by many ids.
 */
export const streamPhase = (streamId: string, interval: number): number => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < streamId.length; i += 1) hash = Math.imul(hash ^ streamId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % Math.max(1, interval);
};

/**
 * Whether a stream at `revision`, whose last snapshot is at `base` (-1: none), is due a snapshot
 * every `interval` events at its `phase` (decision 104): once its event count (revision + 1),
 * shifted by the phase, has passed a multiple of the interval since the snapshot, and at least
 * the interval or MIN_EVENTS_BETWEEN_SNAPSHOTS events (the fewer) came after it.
 *
 * Any `interval` events in a row pass such a multiple, so a stream is never more than `interval`
 * events past its snapshot (decision 067's bound), and in steady use its snapshots stay exactly
 * `interval` apart. With phase 0 for every stream, streams used in step would all come due in
 * the same turn: 1,000 vouchers applied in turn, every 10,000 applies.
 */
export const snapshotDue = (base: number, revision: number, interval: number, phase: number): boolean => {
  const since = revision - base;
  if (since < Math.min(interval, MIN_EVENTS_BETWEEN_SNAPSHOTS)) return false;
  return Math.floor((revision + 1 + phase) / interval) > Math.floor((base + 1 + phase) / interval);
};
