import type { Decider, DomainEvent } from './decider.ts';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type StreamAppend,
} from './eventStore.ts';
import {
  DEFAULT_SNAPSHOT_HELD_EVENTS,
  snapshotAfter,
  snapshotDue,
  streamPhase,
  type Snapshotting,
} from './snapshotStore.ts';

/**
 * One unit of work on a stream: decide events from the state, then read a result. `X` is the
 * union of the events an `also` append may carry (other aggregates' streams).
 */
export interface Work<E extends DomainEvent, S, R, X extends DomainEvent = E> {
  decide(state: S): E[];
  /** Runs right after this work's events are folded in (and before the next work's). */
  result(state: S, events: E[]): R;
  metadata?: Record<string, unknown>;
  /**
   * Appends to OTHER streams that must be written atomically with this work's events (called
   * only when the work decided events, with the state they were decided on; throwing rejects the
   * work like `decide` throwing). When one of them fails its expectation, this work is rejected
   * with that WrongExpectedRevisionError (the caller re-reads that stream and retries) and the
   * rest of the batch is written without it.
   */
  also?(events: E[], stateBefore: S): StreamAppend<X>[];
  /**
   * With snapshots: the keyed entries `decide` reads on a partial state (core/snapshotStore.ts).
   * Called again on the state with them loaded until it names nothing new.
   */
  keys?(state: S): readonly string[];
}

export interface Outcome<R> {
  result: R;
  /** Global position of the last event this work appended; 0 when it appended none. */
  position: number;
  /** Results of the work's `also` appends, in their order (absent when there were none). */
  also?: AppendResult[];
}

interface Pending<E extends DomainEvent, S, X extends DomainEvent> {
  work: Work<E, S, unknown, X>;
  resolve(outcome: Outcome<unknown>): void;
  reject(error: unknown): void;
}

/** A decided work, to be answered once its batch is written. */
type Settled<E extends DomainEvent, S, X extends DomainEvent> =
  | { pending: Pending<E, S, X>; ok: true; result: unknown; wrote: boolean; first: number; count: number }
  | { pending: Pending<E, S, X>; ok: false; error: unknown };

/** Answers each work of a written batch: `position` of the append, `alsoResults` of its `also` appends. */
function settle<E extends DomainEvent, S, X extends DomainEvent>(
  settled: Settled<E, S, X>[],
  position: number,
  alsoResults: AppendResult[],
): void {
  for (const s of settled) {
    if (!s.ok) {
      s.pending.reject(s.error);
      continue;
    }
    s.pending.resolve({
      result: s.result,
      position: s.wrote ? position : 0,
      ...(s.count > 0 ? { also: alsoResults.slice(s.first, s.first + s.count) } : {}),
    });
  }
}

/** `token`: the store's external change token when the entry was known complete. */
interface CacheEntry<S> {
  state: S;
  revision: number;
  token?: number;
  /** With snapshots: what the state holds of its keyed entries. */
  snap?: SnapshotProgress;
}

/**
 * A cache entry as one object literal with every field, so that all entries share one V8 hidden
 * class: a spread copy (`{ ...entry, state }`) gets a hidden class of its own, about 400 bytes more
 * for each of the streams the cache holds (decision 064).
 */
const cacheEntry = <S>(
  state: S,
  revision: number,
  token: number | undefined,
  snap: SnapshotProgress | undefined,
): CacheEntry<S> => ({ state, revision, token, snap });

/**
 * Where a cached state stands against its snapshot: `base`, the revision of the snapshot it was
 * loaded from (-1: folded from the stream's start); `loaded`, the keys its partial state holds
 * (undefined: folded from the start, every key is there); `dirty`, the keys events changed since
 * `base` (the entries the next snapshot writes). The sets belong to the stream's cache entry and
 * grow as its state does; a new snapshot starts them afresh.
 */
interface SnapshotProgress {
  base: number;
  loaded?: Set<string>;
  dirty: Set<string>;
  /** A snapshot of this progress is being written (at most one at a time). */
  saving?: boolean;
  /**
   * The revision of a snapshot written from this progress that it has not moved to yet: it moves
   * when no batch of the stream runs (`trim`), since a running batch counts on what is loaded.
   */
  savedAt?: number;
  /** The entry must be loaded again (its snapshot moved, or could not be written): never cached again. */
  dropped?: boolean;
}

/**
 * The progress of a state just loaded from the snapshot at `base`, or folded from the stream's
 * start (`base` -1, every key there): nothing loaded or changed since.
 */
const progressFrom = (base: number): SnapshotProgress => ({
  base,
  loaded: base < 0 ? undefined : new Set(),
  dirty: new Set(),
});

/** A stored entry written after the snapshot a cached state was loaded from: load it again. */
class StaleSnapshotError extends Error {
  override readonly name = 'StaleSnapshotError';
}

/** Loads of a stream whose snapshot moved under them (another process wrote one) before giving up. */
const SNAPSHOT_LOAD_ATTEMPTS = 5;

export interface CommandHandlerOptions<E extends DomainEvent = DomainEvent, S = unknown> {
  /** Aggregates kept in memory (least recently used dropped first). */
  cacheSize?: number;
  /** Attempts on a revision conflict with another writer before giving up. */
  maxAttempts?: number;
  /** Most works decided together and appended in one write. */
  maxBatch?: number;
  /**
   * The error a work fails with when another writer wins the stream `maxAttempts` times in a row
   * (the HTTP layer answers it as 409). Default: a StreamConflictError.
   */
  conflictError?: (streamId: string) => Error;
  /**
   * Snapshots of the aggregate (core/snapshotStore.ts): loaded in place of the stream's start,
   * written every `every` events after a batch, keyed entries loaded on demand (`Work.keys`).
   */
  snapshots?: Snapshotting<E, S>;
  /** A snapshot that could not be written or read (the command goes on without it). */
  onSnapshotError?: (error: unknown, streamId: string) => void;
}

/** The default error for a stream that kept changing under the handler (see `conflictError`). */
export class StreamConflictError extends Error {
  override readonly name = 'StreamConflictError';
  constructor(readonly streamId: string) {
    super(`${streamId} is being changed by another writer; retry`);
  }
}

/**
 * Runs works against event-sourced aggregates:
 * - works on one stream are serialised in-process and the ones queued meanwhile are decided one
 *   after the other and appended together, in ONE append with the expected revision, so a hot
 *   voucher costs one write per batch and its retries cannot storm;
 * - the aggregate is cached and brought up to date by reading only the events after the cached
 *   revision, so the cost of a command does not grow with the length of the stream; when the
 *   store can tell that nobody else has written since (`externalChangeToken`), not even that
 *   read is made: every write of this process to the stream went through this handler;
 * - a revision conflict (another process wrote) drops the cache and re-decides the whole batch,
 *   at most `maxAttempts` times, then fails with CONCURRENT_MODIFICATION (409); any other store
 *   failure rejects the batch as it is (an outage is never reported as a conflict).
 */
export class CommandHandler<C, E extends DomainEvent, S, X extends DomainEvent = E> {
  private readonly cache = new Map<string, CacheEntry<S>>();
  private readonly queues = new Map<string, Array<Pending<E, S, E | X>>>();
  /** Streams with a batch being decided or written: a read waits for it and sees its outcome. */
  private readonly writing = new Set<string>();
  private readonly idleWaiters: Array<() => void> = [];
  /** Snapshots being written: `idle()` waits for them too. */
  private readonly saves = new Set<Promise<void>>();
  private readonly cacheSize: number;
  private readonly maxAttempts: number;
  private readonly maxBatch: number;
  private readonly conflictError: (streamId: string) => Error;
  private readonly snapshots: Snapshotting<E, S> | undefined;
  private readonly onSnapshotError: (error: unknown, streamId: string) => void;

  /**
   * `store` holds the aggregate's events `E` and those (`X`) that works append to other streams
   * with `also`; `decider` must be pure: a state, once folded, is never changed, so a cached state
   * can be read while a batch decided on it is being written.
   */
  constructor(
    private readonly store: EventStore<E | X>,
    private readonly decider: Decider<C, E, S>,
    options: CommandHandlerOptions<E, S> = {},
  ) {
    this.cacheSize = options.cacheSize ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.maxBatch = options.maxBatch ?? 256;
    this.conflictError = options.conflictError ?? ((streamId) => new StreamConflictError(streamId));
    this.snapshots = options.snapshots;
    this.onSnapshotError = options.onSnapshotError ?? (() => undefined);
  }

  execute<R>(streamId: string, work: Work<E, S, R, E | X>): Promise<Outcome<R>> {
    return new Promise<Outcome<R>>((resolve, reject) => {
      const pending = { work, resolve, reject } as Pending<E, S, E | X>;
      const queue = this.queues.get(streamId);
      if (queue) {
        queue.push(pending);
        return;
      }
      this.queues.set(streamId, [pending]);
      void this.drain(streamId);
    });
  }

  /**
   * A read-only decision on the stream's state (validate): `view` runs on the state as of the
   * last write. When the aggregate is cached and up to date and no batch is being written on the
   * stream, `view` runs at once on the cached state, with no queueing and no batch (works queued
   * but not started have not happened yet); otherwise it runs as a work that decides nothing,
   * after the works queued before it. A read that arrives while a batch is being written waits
   * for that append and sees its events once they are durable, never before.
   */
  read<R>(streamId: string, view: (state: S) => R, keys?: (state: S) => readonly string[]): Promise<R> {
    const cached = this.writing.has(streamId) ? undefined : this.cache.get(streamId);
    if (
      cached &&
      cached.token !== undefined &&
      cached.token === this.store.externalChangeToken?.() &&
      (keys === undefined || missingKeys(cached, keys(cached.state)).length === 0)
    ) {
      try {
        return Promise.resolve(view(cached.state));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.execute(streamId, { decide: () => [], result: view, ...(keys ? { keys } : {}) }).then(
      (outcome) => outcome.result,
    );
  }

  /** Resolves once no work is queued or running on any stream and no snapshot is being written (before closing the stores). */
  idle(): Promise<void> {
    if (this.queues.size === 0 && this.saves.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private wakeIdle(): void {
    if (this.queues.size === 0 && this.saves.size === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
  }

  /** Forgets every cached aggregate (for tests and rebuilds). */
  clearCache(): void {
    this.cache.clear();
  }

  /**
   * The stream's state and revision as of now, without queueing behind the stream's works: for a
   * decision written through another stream's `also`, whose expected revision guards it.
   */
  async peek(streamId: string): Promise<{ state: S; revision: number }> {
    const entry = await this.load(streamId);
    const cached = this.cache.get(streamId);
    if (!cached || cached.revision <= entry.revision) this.remember(streamId, entry);
    return { state: entry.state, revision: entry.revision };
  }

  /**
   * `peek` for a decision whose append is guarded by the revision it returns: a stream this
   * handler holds no entry for is taken to be new (initial state, revision -1) without reading
   * the store. A wrong guess (the stream exists) can only let the decision be too permissive, and
   * then its append, expecting no stream, fails and writes nothing; the caller forgets the stream
   * and decides again with `peek`. Saves a read for the common case of a stream first written now
   * (a checkout's order). `assumed` tells whether the state was guessed rather than read.
   */
  async peekOrAssumeNew(streamId: string): Promise<{ state: S; revision: number; assumed: boolean }> {
    if (!this.cache.has(streamId)) return { state: this.decider.initialState(), revision: -1, assumed: true };
    return { ...(await this.peek(streamId)), assumed: false };
  }

  /**
   * Events of this stream written elsewhere (another handler's `also`) after `expectedRevision`:
   * folded into the cached aggregate when it is at that revision, else the entry is dropped; a
   * stream written new (expected revision -1) is cached from these events alone.
   */
  learn(streamId: string, expectedRevision: number, events: E[], nextRevision: number): void {
    const cached = this.cache.get(streamId);
    if (!cached) {
      if (expectedRevision !== -1) return;
      // A stream written new (expected: no stream): these events are its whole history.
      let state = this.decider.initialState();
      for (const event of events) state = this.decider.evolve(state, event);
      const snap = this.snapshots ? progressFrom(-1) : undefined;
      const entry = cacheEntry(state, nextRevision, this.store.externalChangeToken?.(), snap);
      this.touched(entry, events);
      this.remember(streamId, entry);
      return;
    }
    if (
      cached.revision !== expectedRevision ||
      (this.snapshots && events.some((e) => missingKeys(cached, this.snapshots!.codec.eventKeys(e)).length > 0))
    ) {
      this.cache.delete(streamId);
      return;
    }
    let state = cached.state;
    for (const event of events) state = this.decider.evolve(state, event);
    this.touched(cached, events);
    this.remember(streamId, { ...cached, state, revision: nextRevision });
  }

  /** Drops one cached aggregate (after a conflict seen elsewhere). */
  forget(streamId: string): void {
    this.cache.delete(streamId);
  }

  private async drain(streamId: string): Promise<void> {
    const queue = this.queues.get(streamId)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, this.maxBatch);
      await this.runBatch(streamId, batch);
      this.trim(streamId);
      if (this.snapshotDue(streamId)) this.snapshot(streamId);
    }
    this.queues.delete(streamId);
    this.wakeIdle();
  }

  private async runBatch(streamId: string, initial: Array<Pending<E, S, E | X>>): Promise<void> {
    let batch = initial;
    for (let attempt = 1; batch.length > 0; attempt += 1) {
      let entry: CacheEntry<S>;
      try {
        entry = await this.prepare(streamId, batch);
      } catch (error) {
        batch.forEach((p) => p.reject(error));
        return;
      }
      this.writing.add(streamId);
      try {
        const { state, settled, events, also } = this.decideAll(entry, batch);
        if (events.length === 0) {
          this.remember(
            streamId,
            entry.state === state ? entry : cacheEntry(state, entry.revision, entry.token, entry.snap),
          );
          settle(settled, 0, []);
          return;
        }
        try {
          const expectedRevision: ExpectedRevision = entry.revision < 0 ? 'no_stream' : entry.revision;
          const own = { streamId, events, expectedRevision };
          const [appended, ...others] =
            also.length === 0
              ? [await this.store.appendToStream(streamId, events, { expectedRevision })]
              : await this.store.appendToStreams([own, ...also.map((a) => a.append)]);
          // A foreign write between the load and now changed the token: the next load then reads.
          this.touched(entry, events);
          this.remember(streamId, cacheEntry(state, appended!.nextExpectedRevision, entry.token, entry.snap));
          settle(settled, appended!.position, others);
          return;
        } catch (error) {
          this.cache.delete(streamId); // the stream may have moved: the next load reads it
          if (error instanceof WrongExpectedRevisionError && error.streamId !== streamId) {
            // Another stream of an `also` moved: only the works that wrote to it fail (they retry).
            const failed = new Set(also.filter((a) => a.append.streamId === error.streamId).map((a) => a.pending));
            failed.forEach((p) => p.reject(error));
            batch = batch.filter((p) => !failed.has(p));
            attempt -= 1; // not a conflict on this stream; each round removes at least one work
            continue;
          }
          if (!(error instanceof WrongExpectedRevisionError)) {
            batch.forEach((p) => p.reject(error));
            return;
          }
          if (attempt >= this.maxAttempts) {
            const conflict = this.conflictError(streamId);
            batch.forEach((p) => p.reject(conflict));
            return;
          }
        }
      } finally {
        this.writing.delete(streamId);
      }
    }
  }

  private decideAll(entry: CacheEntry<S>, batch: Array<Pending<E, S, E | X>>) {
    let state = entry.state;
    const events: NewEvent<E>[] = [];
    const also: Array<{ pending: Pending<E, S, E | X>; append: StreamAppend<E | X> }> = [];
    const settled: Settled<E, S, E | X>[] = [];
    for (const pending of batch) {
      try {
        const decided = pending.work.decide(state);
        if (this.snapshots) {
          // A decision on a key the partial state did not hold would be wrong: refuse it instead.
          const codec = this.snapshots.codec;
          const unloaded = decided.flatMap((event) => missingKeys(entry, codec.eventKeys(event)));
          if (unloaded.length > 0) throw new Error(`keys not loaded before deciding: ${unloaded.join(', ')}`);
        }
        const mine = decided.length > 0 && pending.work.also ? pending.work.also(decided, state) : [];
        const metadata = pending.work.metadata ?? {};
        // Folded into the state means appended: whatever `result` does next, state and log agree.
        for (const event of decided) {
          state = this.decider.evolve(state, event);
          events.push({ ...event, metadata });
        }
        const first = also.length;
        for (const append of mine) also.push({ pending, append });
        settled.push({
          pending,
          ok: true,
          result: pending.work.result(state, decided),
          wrote: decided.length > 0,
          first,
          count: mine.length,
        });
      } catch (error) {
        settled.push({ pending, ok: false, error });
      }
    }
    return { state, settled, events, also };
  }

  /**
   * The stream's entry, up to date, with every key the batch's works name loaded (with
   * snapshots); loaded again from the newest snapshot when an entry moved past the one it holds.
   */
  private async prepare(streamId: string, batch: Array<Pending<E, S, E | X>>): Promise<CacheEntry<S>> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        let entry = await this.load(streamId);
        for (let round = 0; round < 8 && entry.snap?.loaded; round += 1) {
          const missing = new Set<string>();
          for (const p of batch)
            for (const key of missingKeys(entry, p.work.keys?.(entry.state) ?? [])) missing.add(key);
          if (missing.size === 0) break;
          entry = await this.withKeys(streamId, entry, [...missing]);
          this.remember(streamId, entry);
        }
        return entry;
      } catch (error) {
        if (!(error instanceof StaleSnapshotError) || attempt >= SNAPSHOT_LOAD_ATTEMPTS) throw error;
        this.cache.delete(streamId);
      }
    }
  }

  /** The entry's state with these keys loaded from the snapshot store. */
  private async withKeys(streamId: string, entry: CacheEntry<S>, keys: string[]): Promise<CacheEntry<S>> {
    const { store, codec } = this.snapshots!;
    const snap = entry.snap!;
    const found = await store.entries(streamId, keys);
    const values: Array<[string, unknown]> = [];
    for (const [key, stored] of found) {
      if (stored.revision > snap.base) throw new StaleSnapshotError(`${streamId}: ${key} is past ${snap.base}`);
      values.push([key, stored.value]);
    }
    for (const key of keys) snap.loaded!.add(key);
    return cacheEntry(codec.withEntries(entry.state, values), entry.revision, entry.token, entry.snap);
  }

  private async load(streamId: string): Promise<CacheEntry<S>> {
    const cached = this.cache.get(streamId);
    const token = this.store.externalChangeToken?.();
    if (cached && token !== undefined && cached.token === token) return cached;
    let entry: CacheEntry<S> = cached ?? (await this.start(streamId));
    const recorded = await this.store.readStream<E>(streamId, { fromRevision: entry.revision + 1 });
    if (entry.snap?.loaded && recorded.length > 0) {
      const codec = this.snapshots!.codec;
      const keys = new Set(recorded.flatMap((event) => missingKeys(entry, codec.eventKeys(event))));
      if (keys.size > 0) entry = await this.withKeys(streamId, entry, [...keys]);
    }
    let { state, revision } = entry;
    try {
      for (const event of recorded) {
        state = this.decider.evolve(state, event);
        revision = event.revision;
      }
    } catch (error) {
      this.cache.delete(streamId); // half-folded: the next load starts from the stream's beginning
      throw error;
    }
    this.touched(entry, recorded);
    return cacheEntry(state, revision, token, entry.snap);
  }

  /** A stream not cached: from its snapshot when there is one, else from its start. */
  private async start(streamId: string): Promise<CacheEntry<S>> {
    if (!this.snapshots) return cacheEntry(this.decider.initialState(), -1, undefined, undefined);
    let snapshot: { revision: number; core: unknown } | undefined;
    try {
      snapshot = await this.snapshots.store.load(streamId);
    } catch (error) {
      this.onSnapshotError(error, streamId); // folded from the start instead
    }
    if (!snapshot) {
      return cacheEntry(this.decider.initialState(), -1, undefined, progressFrom(-1));
    }
    return cacheEntry(
      this.snapshots.codec.fromCore(snapshot.core),
      snapshot.revision,
      undefined,
      progressFrom(snapshot.revision),
    );
  }

  /** Records the keys these folded events changed, for the next snapshot. */
  private touched(entry: CacheEntry<S>, events: E[]): void {
    if (!entry.snap || !this.snapshots) return;
    for (const event of events) for (const key of this.snapshots.codec.eventKeys(event)) entry.snap.dirty.add(key);
  }

  /**
   * Whether the stream's entry folded enough events since its snapshot: `every`, or its share of
   * the events all cached entries may hold (`snapshotAfter`), counted at the stream's own phase
   * (`snapshotDue`), so that streams used in step do not all come due in the same turn.
   */
  private snapshotDue(streamId: string): boolean {
    const entry = this.cache.get(streamId);
    if (!this.snapshots || !entry?.snap) return false;
    const { every, held = DEFAULT_SNAPSHOT_HELD_EVENTS } = this.snapshots;
    const interval = snapshotAfter(every, held, this.cache.size);
    return snapshotDue(entry.snap.base, entry.revision, interval, streamPhase(streamId, interval));
  }

  /**
   * Starts writing a snapshot of the stream's entry, unless one is being written: the stream's
   * next batches do not wait for it (`idle()` does).
   */
  private snapshot(streamId: string): void {
    const snap = this.cache.get(streamId)?.snap;
    if (!snap || snap.saving || snap.savedAt !== undefined) return;
    snap.saving = true;
    const save: Promise<void> = this.save(streamId, snap).finally(() => {
      snap.saving = false;
      this.saves.delete(save);
      this.wakeIdle();
    });
    this.saves.add(save);
  }

  /**
   * Writes a snapshot of the stream's entry (the core and the entries changed since its base),
   * after the batch's answers have gone out. Batches may run meanwhile; what they fold goes into
   * the next snapshot. Once it is written, the entry moves to it (`trim`: now, or after the batch
   * running). A snapshot that cannot be written is reported and the entry dropped (the next load
   * folds from the last one written).
   */
  private async save(streamId: string, snap: SnapshotProgress): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    const entry = this.cache.get(streamId);
    if (entry?.snap !== snap) return; // dropped or loaded again meanwhile
    const { store, codec } = this.snapshots!;
    const { state, revision } = entry;
    const saved = snap.dirty;
    snap.dirty = new Set(); // what batches fold from now on: the next snapshot's entries
    try {
      const written = await store.save(streamId, snap.base, revision, codec.core(state), codec.entries(state, saved));
      if (!written) {
        this.drop(streamId, snap); // another process wrote one: load from it
        return;
      }
      snap.savedAt = revision;
      if (!this.queues.has(streamId)) this.trim(streamId); // else after the batch running
    } catch (error) {
      this.onSnapshotError(error, streamId);
      this.drop(streamId, snap);
    }
  }

  /**
   * Moves the entry's progress to the snapshot written from it (`savedAt`): its base becomes that
   * revision, and its state keeps only the entries changed since (all loaded: a folded event's
   * keys are), the others being in the store. Called when no batch of the stream runs.
   */
  private trim(streamId: string): void {
    const entry = this.cache.get(streamId);
    const snap = entry?.snap;
    if (!entry || snap?.savedAt === undefined) return;
    snap.base = snap.savedAt;
    snap.savedAt = undefined;
    snap.loaded = new Set(snap.dirty);
    const { codec } = this.snapshots!;
    const kept = codec.entries(entry.state, snap.loaded);
    this.cache.set(
      streamId,
      cacheEntry(codec.withEntries(codec.withoutEntries(entry.state), kept), entry.revision, entry.token, snap),
    );
  }

  /** Drops the stream's entry if it has this progress, and keeps a batch running from caching it again. */
  private drop(streamId: string, snap: SnapshotProgress): void {
    snap.dropped = true;
    if (this.cache.get(streamId)?.snap === snap) this.cache.delete(streamId);
  }

  private remember(streamId: string, entry: CacheEntry<S>): void {
    this.cache.delete(streamId);
    if (entry.snap?.dropped) return;
    this.cache.set(streamId, entry);
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
  }
}

/** The keys an entry's partial state does not hold (none when it was folded from the start). */
const missingKeys = <S>(entry: CacheEntry<S>, keys: readonly string[]): string[] => {
  const loaded = entry.snap?.loaded;
  return loaded ? keys.filter((key) => !loaded.has(key)) : [];
};
