import type { Decider, DomainEvent } from './decider.ts';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type StreamAppend,
} from './eventStore.ts';

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
}

export interface CommandHandlerOptions {
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
  private readonly cacheSize: number;
  private readonly maxAttempts: number;
  private readonly maxBatch: number;
  private readonly conflictError: (streamId: string) => Error;

  /**
   * `store` holds the aggregate's events `E` and those (`X`) that works append to other streams
   * with `also`; `decider` must be pure: a state, once folded, is never changed, so a cached state
   * can be read while a batch decided on it is being written.
   */
  constructor(
    private readonly store: EventStore<E | X>,
    private readonly decider: Decider<C, E, S>,
    options: CommandHandlerOptions = {},
  ) {
    this.cacheSize = options.cacheSize ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.maxBatch = options.maxBatch ?? 256;
    this.conflictError = options.conflictError ?? ((streamId) => new StreamConflictError(streamId));
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
  read<R>(streamId: string, view: (state: S) => R): Promise<R> {
    const cached = this.writing.has(streamId) ? undefined : this.cache.get(streamId);
    if (cached && cached.token !== undefined && cached.token === this.store.externalChangeToken?.()) {
      try {
        return Promise.resolve(view(cached.state));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.execute(streamId, { decide: () => [], result: view }).then((outcome) => outcome.result);
  }

  /** Resolves once no work is queued or running on any stream (before closing the store). */
  idle(): Promise<void> {
    if (this.queues.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
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
      this.remember(streamId, { state, revision: nextRevision, token: this.store.externalChangeToken?.() });
      return;
    }
    if (cached.revision !== expectedRevision) {
      this.cache.delete(streamId);
      return;
    }
    let state = cached.state;
    for (const event of events) state = this.decider.evolve(state, event);
    this.remember(streamId, { state, revision: nextRevision, token: cached.token });
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
    }
    this.queues.delete(streamId);
    if (this.queues.size === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
  }

  private async runBatch(streamId: string, initial: Array<Pending<E, S, E | X>>): Promise<void> {
    let batch = initial;
    for (let attempt = 1; batch.length > 0; attempt += 1) {
      let entry: CacheEntry<S>;
      try {
        entry = await this.load(streamId);
      } catch (error) {
        batch.forEach((p) => p.reject(error));
        return;
      }
      this.writing.add(streamId);
      try {
        const { state, settled, events, also } = this.decideAll(entry.state, batch);
        if (events.length === 0) {
          this.remember(streamId, entry.state === state ? entry : { ...entry, state });
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
          this.remember(streamId, { state, revision: appended!.nextExpectedRevision, token: entry.token });
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

  private decideAll(initial: S, batch: Array<Pending<E, S, E | X>>) {
    let state = initial;
    const events: NewEvent<E>[] = [];
    const also: Array<{ pending: Pending<E, S, E | X>; append: StreamAppend<E | X> }> = [];
    const settled: Settled<E, S, E | X>[] = [];
    for (const pending of batch) {
      try {
        const decided = pending.work.decide(state);
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

  private async load(streamId: string): Promise<CacheEntry<S>> {
    const cached = this.cache.get(streamId);
    const token = this.store.externalChangeToken?.();
    if (cached && token !== undefined && cached.token === token) return cached;
    const fromRevision = cached ? cached.revision + 1 : 0;
    const recorded = await this.store.readStream<E>(streamId, { fromRevision });
    let state = cached ? cached.state : this.decider.initialState();
    let revision = cached ? cached.revision : -1;
    try {
      for (const event of recorded) {
        state = this.decider.evolve(state, event);
        revision = event.revision;
      }
    } catch (error) {
      this.cache.delete(streamId); // half-folded: the next load starts from the stream's beginning
      throw error;
    }
    return { state, revision, token };
  }

  private remember(streamId: string, entry: CacheEntry<S>): void {
    this.cache.delete(streamId);
    this.cache.set(streamId, entry);
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
  }
}
