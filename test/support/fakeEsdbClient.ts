/**
 * An in-memory stand-in for `@eventstore/db-client`'s client, for tests where no EventStoreDB
 * server exists: the calls the EventStoreDB adapter makes (appendToStream, readStream, readAll,
 * subscribeToAll, dispose), with the server's documented behaviour as the adapter relies on it:
 *
 * - one log; each event gets a commit position (= prepare position) that grows by its size in
 *   bytes, so positions are large and not contiguous;
 * - expected revisions checked per append, WrongExpectedVersionError with the current revision
 *   (or NO_STREAM); reading a missing stream fails with StreamNotFoundError;
 * - a $all read forwards starts AT its position (inclusive), backwards from a position returns
 *   the events before it; maxCount bounds it;
 * - a subscription delivers the events after its position that match its prefix filter, then
 *   every later one, until unsubscribe();
 * - with `noise`, every append is followed by an event of another namespace and a system event,
 *   as a shared server would interleave them.
 *
 * It is not a server: what it proves is the adapter's logic against these rules, not the rules.
 */
import { PassThrough, Readable } from 'node:stream';
import {
  ANY,
  BACKWARDS,
  END,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  type AllStreamResolvedEvent,
  type AppendExpectedRevision,
  type Filter,
  type Position,
  type ReadPosition,
  type ReadRevision,
} from '@eventstore/db-client';
import type { EsdbClient } from '../../src/infrastructure/eventStore/esdbEventStore.ts';

interface Stored {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  data: unknown;
  metadata: unknown;
  created: Date;
  position: Position;
}

interface Live {
  sink: PassThrough;
  prefixes: string[];
}

export class FakeEsdbClient {
  private readonly log: Stored[] = [];
  private readonly revisions = new Map<string, bigint>();
  private readonly live = new Set<Live>();
  private nextPosition = 1_000n;
  disposed = false;

  constructor(private readonly options: { noise?: boolean } = {}) {}

  asClient(): EsdbClient {
    return this as unknown as EsdbClient;
  }

  async appendToStream(
    streamName: string,
    events: Array<{ id: string; type: string; data: unknown; metadata?: unknown }>,
    options: { expectedRevision?: AppendExpectedRevision } = {},
  ) {
    await Promise.resolve(); // a network round trip: callers interleave
    const current = this.revisions.get(streamName);
    const expected = options.expectedRevision ?? ANY;
    const holds =
      expected === ANY ||
      (expected === NO_STREAM && current === undefined) ||
      (expected === STREAM_EXISTS && current !== undefined) ||
      (typeof expected === 'bigint' && expected === current);
    if (!holds) {
      throw new WrongExpectedVersionError(undefined, { streamName, expected, current: current ?? NO_STREAM });
    }
    let revision = current ?? -1n;
    for (const event of events) {
      revision += 1n;
      this.record(streamName, revision, event);
    }
    this.revisions.set(streamName, revision);
    const position = this.log.at(-1)!.position;
    if (this.options.noise) {
      this.record('production-other.noise', this.bump('production-other.noise'), { type: 'Noise', data: {} });
      this.record('$statistics-127.0.0.1:2113', this.bump('$statistics-127.0.0.1:2113'), { type: '$stats', data: {} });
    }
    return { success: true, nextExpectedRevision: revision, position };
  }

  readStream(streamName: string, options: { fromRevision?: ReadRevision; direction?: string; maxCount?: number } = {}) {
    const events = this.log.filter((e) => e.streamId === streamName);
    const backwards = options.direction === BACKWARDS;
    return this.reading(async () => {
      if (events.length === 0) throw new StreamNotFoundError(undefined, streamName);
      const from = options.fromRevision ?? (backwards ? END : START);
      const ordered = backwards ? [...events].reverse() : events;
      const started = ordered.filter(
        (e) =>
          from === START ||
          from === END ||
          (backwards ? e.revision <= (from as bigint) : e.revision >= (from as bigint)),
      );
      return started.slice(0, options.maxCount ?? Number.MAX_SAFE_INTEGER);
    });
  }

  readAll(options: { fromPosition?: ReadPosition; direction?: string; maxCount?: number } = {}) {
    const backwards = options.direction === BACKWARDS;
    const from = options.fromPosition ?? (backwards ? END : START);
    return this.reading(async () => {
      const ordered = backwards ? [...this.log].reverse() : [...this.log];
      const started = ordered.filter((e) => {
        if (from === START || from === END) return true;
        return backwards ? e.position.commit < from.commit : e.position.commit >= from.commit;
      });
      return started.slice(0, options.maxCount ?? Number.MAX_SAFE_INTEGER);
    });
  }

  subscribeToAll(options: { fromPosition?: ReadPosition; filter?: Filter } = {}) {
    const prefixes = options.filter && 'prefixes' in options.filter ? options.filter.prefixes : [''];
    const sink = new PassThrough({ objectMode: true });
    const live: Live = { sink, prefixes };
    const from = options.fromPosition ?? START;
    const after = from === START ? -1n : from === END ? (this.log.at(-1)?.position.commit ?? -1n) : from.commit;
    for (const event of this.log) if (event.position.commit > after) this.offer(live, event);
    this.live.add(live);
    return Object.assign(sink, {
      unsubscribe: async () => {
        this.live.delete(live);
        sink.end();
      },
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }

  private bump(streamName: string): bigint {
    const revision = (this.revisions.get(streamName) ?? -1n) + 1n;
    this.revisions.set(streamName, revision);
    return revision;
  }

  private record(
    streamId: string,
    revision: bigint,
    event: { id?: string; type: string; data: unknown; metadata?: unknown },
  ) {
    const position = { commit: this.nextPosition, prepare: this.nextPosition };
    this.nextPosition += BigInt(100 + JSON.stringify(event.data ?? null).length);
    const stored: Stored = {
      streamId,
      id: event.id ?? crypto.randomUUID(),
      revision,
      type: event.type,
      data: structuredClone(event.data),
      metadata: event.metadata === undefined ? undefined : structuredClone(event.metadata),
      created: new Date(),
      position,
    };
    this.log.push(stored);
    for (const live of this.live) this.offer(live, stored);
  }

  private offer(live: Live, event: Stored): void {
    if (live.prefixes.some((prefix) => event.streamId.startsWith(prefix))) live.sink.write(this.resolved(event));
  }

  private resolved(event: Stored): AllStreamResolvedEvent {
    return {
      event: {
        ...event,
        data: structuredClone(event.data),
        metadata: event.metadata === undefined ? undefined : structuredClone(event.metadata),
        isJson: true,
      },
      commitPosition: event.position.commit,
    } as AllStreamResolvedEvent;
  }

  /** A read as the client returns it: a stream whose events (or error) come after a round trip. */
  private reading(produce: () => Promise<Stored[]>): Readable {
    return Readable.from(
      async function* (this: FakeEsdbClient) {
        await Promise.resolve();
        for (const event of await produce()) yield this.resolved(event);
      }.call(this),
    );
  }
}
