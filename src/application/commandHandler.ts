import { DomainError } from '../domain/errors.ts';
import {
  WrongExpectedRevisionError, type EventStore, type NewEvent, type RecordedEvent,
} from '../infrastructure/eventStore/eventStore.ts';

export interface DomainEvent {
  type: string;
  data: Record<string, unknown> & object;
}

export interface Decider<E extends DomainEvent, S> {
  evolve(state: S, event: E): S;
  initialState(): S;
  /** Turns a stored event into the current domain event (the place for upcasters). */
  upcast?(event: RecordedEvent): E;
}

/** One unit of work on a stream: decide events from the state, then read a result. */
export interface Work<E, S, R> {
  decide(state: S): E[];
  /** Runs right after this work's events are folded in (and before the next work's). */
  result(state: S, events: E[]): R;
  metadata?: Record<string, unknown>;
}

export interface Outcome<R> {
  result: R;
  /** Global position of the last event this work appended; 0 when it appended none. */
  position: number;
}

interface Pending<E, S> {
  work: Work<E, S, unknown>;
  resolve(outcome: Outcome<unknown>): void;
  reject(error: unknown): void;
}

/** `token`: the store's external change token when the entry was known complete. */
interface CacheEntry<S> { state: S; revision: number; token?: number }

export interface CommandHandlerOptions {
  /** Aggregates kept in memory (least recently used dropped first). */
  cacheSize?: number;
  /** Attempts on a revision conflict with another writer before giving up. */
  maxAttempts?: number;
  /** Most works decided together and appended in one write. */
  maxBatch?: number;
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
export class CommandHandler<E extends DomainEvent, S> {
  private readonly cache = new Map<string, CacheEntry<S>>();
  private readonly queues = new Map<string, Array<Pending<E, S>>>();
  private readonly idleWaiters: Array<() => void> = [];
  private readonly cacheSize: number;
  private readonly maxAttempts: number;
  private readonly maxBatch: number;

  constructor(private readonly store: EventStore, private readonly decider: Decider<E, S>, options: CommandHandlerOptions = {}) {
    this.cacheSize = options.cacheSize ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.maxBatch = options.maxBatch ?? 256;
  }

  execute<R>(streamId: string, work: Work<E, S, R>): Promise<Outcome<R>> {
    return new Promise<Outcome<R>>((resolve, reject) => {
      const pending = { work, resolve, reject } as Pending<E, S>;
      const queue = this.queues.get(streamId);
      if (queue) { queue.push(pending); return; }
      this.queues.set(streamId, [pending]);
      void this.drain(streamId);
    });
  }

  /** Resolves once no work is queued or running on any stream (before closing the store). */
  idle(): Promise<void> {
    if (this.queues.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Forgets every cached aggregate (for tests and rebuilds). */
  clearCache(): void { this.cache.clear(); }

  private async drain(streamId: string): Promise<void> {
    const queue = this.queues.get(streamId)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, this.maxBatch);
      await this.runBatch(streamId, batch);
    }
    this.queues.delete(streamId);
    if (this.queues.size === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
  }

  private async runBatch(streamId: string, batch: Array<Pending<E, S>>): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      let entry: CacheEntry<S>;
      try {
        entry = await this.load(streamId);
      } catch (error) {
        batch.forEach((p) => p.reject(error));
        return;
      }
      const { state, settled, events } = this.decideAll(entry.state, batch);
      if (events.length === 0) {
        this.remember(streamId, entry.state === state ? entry : { ...entry, state });
        settled.forEach((s) => s.settle(0));
        return;
      }
      try {
        const expectedRevision = entry.revision < 0 ? 'no_stream' : entry.revision;
        const appended = await this.store.appendToStream(streamId, events, { expectedRevision });
        // A foreign write between the load and now changed the token: the next load then reads.
        this.remember(streamId, { state, revision: appended.nextExpectedRevision, token: entry.token });
        settled.forEach((s) => s.settle(appended.position));
        return;
      } catch (error) {
        this.cache.delete(streamId); // its collections may have been evolved in place
        if (!(error instanceof WrongExpectedRevisionError)) {
          batch.forEach((p) => p.reject(error));
          return;
        }
        if (attempt >= this.maxAttempts) {
          const conflict = new DomainError('CONCURRENT_MODIFICATION', 'The voucher is being changed by another writer; retry the request', {});
          batch.forEach((p) => p.reject(conflict));
          return;
        }
      }
    }
  }

  private decideAll(initial: S, batch: Array<Pending<E, S>>) {
    let state = initial;
    const events: NewEvent[] = [];
    const settled: Array<{ settle(position: number): void }> = [];
    for (const pending of batch) {
      try {
        const decided = pending.work.decide(state);
        const metadata = pending.work.metadata ?? {};
        // Folded into the state means appended: whatever `result` does next, state and log agree.
        for (const event of decided) {
          state = this.decider.evolve(state, event);
          events.push({ type: event.type, data: event.data, metadata });
        }
        const result = pending.work.result(state, decided);
        settled.push({ settle: (position) => pending.resolve({ result, position: decided.length > 0 ? position : 0 }) });
      } catch (error) {
        settled.push({ settle: () => pending.reject(error) });
      }
    }
    return { state, settled, events };
  }

  private async load(streamId: string): Promise<CacheEntry<S>> {
    const cached = this.cache.get(streamId);
    const token = this.store.externalChangeToken?.();
    if (cached && token !== undefined && cached.token === token) return cached;
    const fromRevision = cached ? cached.revision + 1 : 0;
    const recorded = await this.store.readStream(streamId, { fromRevision });
    let state = cached ? cached.state : this.decider.initialState();
    let revision = cached ? cached.revision : -1;
    try {
      for (const event of recorded) {
        state = this.decider.evolve(state, this.decider.upcast ? this.decider.upcast(event) : (event as unknown as E));
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
