/**
 * EventStore port on an EventStoreDB server (`@eventstore/db-client` 6.x, server 22.6 or later).
 *
 * - Namespace: every stream of a store lives under `<namespace>.`, so that one server holds the
 *   environments side by side (`sandbox.voucher-…`, `production.voucher-…`) and never mixes them.
 *   Reads of $all keep only the namespace's events (system streams, `$`-prefixed, never match);
 *   subscriptions ask the server for them with a stream-name prefix filter.
 * - Positions: an event's global position is its commit position in the server's transaction log
 *   (a byte offset), as a JS number. Events appended through gRPC are committed one log record
 *   each, so the commit position is unique per event and strictly increasing in $all order; the
 *   number is exact while the log stays under 2^53 bytes (8 PiB), and the store refuses to hand
 *   out a larger one rather than round it. `after: n` of a read or subscription is 0 or a position
 *   this store returned.
 * - Several streams at once: EventStoreDB 24.10 has no atomic append to several streams, so
 *   `atomicMultiStream` is false and `appendToStreams` rejects without writing.
 * - Failures: a server that cannot be reached, a deadline passed or no leader is a
 *   StoreUnavailableError('eventstore'); a failed expectation a WrongExpectedRevisionError.
 */
import { randomUUID } from 'node:crypto';
import type {
  BACKWARDS,
  ErrorType,
  EventStoreDBClient,
  FORWARDS,
  AllStreamResolvedEvent,
  AllStreamSubscription,
  AppendExpectedRevision,
  Position,
  ReadPosition,
  ResolvedEvent,
} from '@eventstore/db-client';
import type * as Esdb from '@eventstore/db-client';
import { lazyPackage } from '../../core/lazyPackage.ts';

import {
  WrongExpectedRevisionError,
  type AppendResult,
  type BatchHandler,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  type Upcaster,
} from '../../core/eventStore.ts';
import type { AnyEvent, DomainEvent } from '../../core/decider.ts';
import { StoreUnavailableError } from '../../core/storeUnavailable.ts';

/** The calls the adapter makes on the client (tests stub them). */
export type EsdbClient = Pick<
  EventStoreDBClient,
  'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'
>;

export interface EsdbEventStoreOptions<E extends DomainEvent = AnyEvent> {
  /** Stream-name namespace of this store: letters, digits, `_` and `-` (e.g. the environment). */
  namespace: string;
  /** Applied to every event read back (core/eventStore.ts `Upcaster`). Default: events as stored. */
  upcast?: Upcaster<E>;
  /** Events read per request when $all is scanned (readAll, headPosition). Default 500. */
  pageSize?: number;
  /** close() also disposes of the client (the store opened it). Default false. */
  ownsClient?: boolean;
}

/** The client library, loaded when an EventStoreDB store is first used. */
const esdb = lazyPackage<typeof Esdb>('@eventstore/db-client');

/** Name of the store in StoreUnavailableError and in messages. */
export const EVENTSTORE = 'eventstore';

const DEFAULT_MAX_BATCH_SIZE = 500;
const NAMESPACE = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * Client errors that say the server is not there now (unreachable, too slow, shutting down and
 * cancelling calls, no leader during an election): worth a retry, never a wrong answer.
 */
let transient: Set<string> | undefined;
const transientTypes = (): Set<string> =>
  (transient ??= new Set<string>([
    esdb().ErrorType.UNAVAILABLE,
    esdb().ErrorType.DEADLINE_EXCEEDED,
    esdb().ErrorType.TIMEOUT,
    esdb().ErrorType.CANCELLED,
    esdb().ErrorType.NOT_LEADER,
  ]));

export class EsdbEventStore<E extends DomainEvent = AnyEvent> implements EventStore<E> {
  readonly atomicMultiStream = false;
  private readonly prefix: string;
  private readonly upcast: Upcaster<E> | undefined;
  private readonly pageSize: number;
  private readonly ownsClient: boolean;
  private readonly subscriptions = new Set<EsdbSubscription<E>>();
  private closed = false;
  /** What headPosition() found: this namespace's last event at or before `upTo` is at `head`. */
  private scanned: { upTo: number; head: number } | undefined;

  constructor(
    private readonly client: EsdbClient,
    options: EsdbEventStoreOptions<E>,
  ) {
    if (!NAMESPACE.test(options.namespace)) {
      throw new TypeError(`namespace must be 1-64 letters, digits, _ or -, got "${options.namespace}"`);
    }
    this.prefix = `${options.namespace}.`;
    this.upcast = options.upcast;
    this.pageSize = options.pageSize ?? 500;
    if (!Number.isInteger(this.pageSize) || this.pageSize < 2) throw new RangeError('pageSize must be at least 2');
    this.ownsClient = options.ownsClient ?? false;
  }

  /** The server's name of a port stream. */
  streamName(streamId: string): string {
    return this.prefix + streamId;
  }

  async appendToStream(
    streamId: string,
    events: NewEvent<E>[],
    options: { expectedRevision?: ExpectedRevision } = {},
  ): Promise<AppendResult> {
    this.assertOpen();
    const expected = options.expectedRevision ?? 'any';
    const expectedRevision = toEsdbExpected(expected);
    if (events.length === 0) return this.emptyAppend(streamId, expected);
    const data = events.map((event) =>
      esdb().jsonEvent({
        id: event.id ?? randomUUID(),
        type: event.type,
        data: event.data as Record<string, unknown>,
        metadata: event.metadata ?? {},
      }),
    );
    let result;
    try {
      result = await this.client.appendToStream(this.streamName(streamId), data, { expectedRevision });
    } catch (error) {
      throw this.mapAppendError(error, streamId, expected);
    }
    const nextExpectedRevision = Number(result.nextExpectedRevision);
    // The server reports the commit position of the append's last event.
    const position = result.position
      ? toPosition(result.position)
      : (await this.readStream(streamId, { fromRevision: nextExpectedRevision, maxCount: 1 }))[0]!.position;
    return { nextExpectedRevision, position };
  }

  /** Rejects without writing: the server cannot append to several streams atomically. */
  async appendToStreams(appends: StreamAppend<E>[]): Promise<AppendResult[]> {
    this.assertOpen();
    if (appends.length === 0) throw new TypeError('appendToStreams needs at least one stream');
    if (new Set(appends.map((a) => a.streamId)).size !== appends.length)
      throw new TypeError('appendToStreams: each stream at most once');
    throw new Error(
      'EventStoreDB has no atomic append to several streams (atomicMultiStream is false): append to each stream on its own',
    );
  }

  async readStream<T extends E = E>(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent<T>[]> {
    this.assertOpen();
    const fromRevision = options.fromRevision ?? 0;
    if (!Number.isInteger(fromRevision) || fromRevision < 0) {
      throw new RangeError(`fromRevision must be a non-negative integer, got ${fromRevision}`);
    }
    const maxCount = checkMaxCount(options.maxCount);
    if (maxCount === 0) return [];
    const events: RecordedEvent<T>[] = [];
    try {
      const read = this.client.readStream(this.streamName(streamId), {
        fromRevision: BigInt(fromRevision),
        direction: esdb().FORWARDS,
        ...(maxCount === undefined ? {} : { maxCount }),
      });
      for await (const resolved of read) {
        const event = this.decode(resolved);
        // The stream's events are of the part `T` of the union its caller names (see the port).
        if (event) events.push(event as RecordedEvent<T>);
      }
    } catch (error) {
      if (isCommandError(error, esdb().ErrorType.STREAM_NOT_FOUND)) return [];
      throw mapError(error);
    }
    return events;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent<E>[]> {
    this.assertOpen();
    const after = checkPosition(options.after ?? 0);
    const maxCount = checkMaxCount(options.maxCount);
    const events: RecordedEvent<E>[] = [];
    if (maxCount === 0) return events;
    // $all pages hold every namespace's and the server's own events: scan, keep this namespace's.
    let from: ReadPosition = after === 0 ? esdb().START : fromNumber(after);
    let seen = after;
    for (;;) {
      const page = await this.readAllPage(from, esdb().FORWARDS);
      for (const resolved of page) {
        const position = toPosition(resolved.event!.position);
        if (position <= seen) continue; // a read from a position starts with the event at it
        seen = position;
        const event = this.decode(resolved);
        if (!event) continue;
        events.push(event);
        if (events.length === maxCount) return events;
      }
      if (page.length < this.pageSize) return events;
      from = page.at(-1)!.event!.position;
    }
  }

  /**
   * Position of this namespace's last event, 0 when it has none: $all read backwards from its end
   * down to this namespace's last event, or down to where an earlier call of this instance looked
   * (the log only grows at its end, so what lies below that is known).
   */
  async headPosition(): Promise<number> {
    this.assertOpen();
    const known = this.scanned;
    let from: ReadPosition = esdb().END;
    let top: number | undefined;
    let head: number | undefined;
    while (head === undefined) {
      const page = await this.readAllPage(from, esdb().BACKWARDS);
      for (const resolved of page) {
        const position = toPosition(resolved.event!.position);
        top ??= position;
        if (this.owns(resolved.event!.streamId)) head = position;
        else if (known && position <= known.upTo) head = known.head;
        if (head !== undefined) break;
      }
      if (head === undefined && page.length < this.pageSize) head = 0;
      else from = page.at(-1)?.event!.position ?? esdb().END;
    }
    if (top !== undefined && (!known || top > known.upTo)) this.scanned = { upTo: top, head };
    return head;
  }

  subscribeToAll(options: SubscribeOptions, handler: BatchHandler<E>): Subscription {
    this.assertOpen();
    const maxBatchSize = options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) {
      throw new RangeError(`maxBatchSize must be a positive integer, got ${maxBatchSize}`);
    }
    const after = checkPosition(options.after ?? 0);
    const source = this.client.subscribeToAll({
      fromPosition: after === 0 ? esdb().START : fromNumber(after),
      filter: esdb().streamNameFilter({ prefixes: [this.prefix] }),
    });
    const subscription: EsdbSubscription<E> = new EsdbSubscription<E>(source, handler, {
      after,
      maxBatchSize,
      decode: (resolved) => this.decode(resolved),
      onError: options.onError ?? defaultOnError,
      onEnd: () => this.subscriptions.delete(subscription),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** Stops the subscriptions (waiting for running handler calls), then disposes of an owned client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    if (this.ownsClient) await this.client.dispose();
  }

  private async emptyAppend(streamId: string, expected: ExpectedRevision): Promise<AppendResult> {
    const last = await this.lastRevision(streamId);
    const holds =
      expected === 'any' ||
      (expected === 'no_stream' && last === -1) ||
      (expected === 'stream_exists' && last >= 0) ||
      expected === last;
    if (!holds) throw new WrongExpectedRevisionError(streamId, expected, last);
    return { nextExpectedRevision: last, position: await this.headPosition() };
  }

  private async lastRevision(streamId: string): Promise<number> {
    try {
      for await (const resolved of this.client.readStream(this.streamName(streamId), {
        fromRevision: esdb().END,
        direction: esdb().BACKWARDS,
        maxCount: 1,
      })) {
        return Number(resolved.event!.revision);
      }
      return -1;
    } catch (error) {
      if (isCommandError(error, esdb().ErrorType.STREAM_NOT_FOUND)) return -1;
      throw mapError(error);
    }
  }

  private async readAllPage(from: ReadPosition, direction: typeof FORWARDS | typeof BACKWARDS) {
    const page: AllStreamResolvedEvent[] = [];
    try {
      for await (const resolved of this.client.readAll({ fromPosition: from, direction, maxCount: this.pageSize })) {
        if (resolved.event) page.push(resolved);
      }
    } catch (error) {
      throw mapError(error);
    }
    return page;
  }

  private owns(streamName: string): boolean {
    return streamName.startsWith(this.prefix);
  }

  /** A server event of this namespace as the current version of its port event; undefined for others. */
  private decode(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent<E> | undefined {
    const event = resolved.event;
    if (!event || !this.owns(event.streamId)) return undefined;
    if (!event.position) {
      throw new Error(
        `EventStoreDB gave no position for an event of ${event.streamId}: the server must be 22.6 or later`,
      );
    }
    if (!event.isJson) throw new Error(`event ${event.id} of ${event.streamId} is not JSON`);
    const metadata = event.metadata;
    const stored = {
      type: event.type,
      data: event.data,
      id: event.id,
      streamId: event.streamId.slice(this.prefix.length),
      metadata: isObject(metadata) ? metadata : {},
      revision: Number(event.revision),
      position: toPosition(event.position),
      recordedAt: event.created.toISOString(),
    } as RecordedEvent<AnyEvent>;
    return this.upcast ? this.upcast(stored) : (stored as RecordedEvent<E>);
  }

  private mapAppendError(error: unknown, streamId: string, expected: ExpectedRevision): unknown {
    if (isCommandError(error, esdb().ErrorType.WRONG_EXPECTED_VERSION)) {
      const actual = (asCommandError(error) as { actualVersion?: unknown }).actualVersion;
      return new WrongExpectedRevisionError(streamId, expected, typeof actual === 'bigint' ? Number(actual) : -1);
    }
    return mapError(error);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('EsdbEventStore is closed');
  }
}

/**
 * A client on `url` (EVENTSTORE_URL: `esdb://host:2113?tls=false`, or a cluster's connection
 * string), once the server has answered a read of one event of $all; fails with a message naming
 * EVENTSTORE_URL (credentials left out) when the string is not one or the server does not answer.
 * One client serves the stores of every namespace.
 */
export async function connectEsdb(
  url: string,
  options: { checkDeadlineMs?: number } = {},
): Promise<EventStoreDBClient> {
  let client: EventStoreDBClient;
  try {
    client = esdb().EventStoreDBClient.connectionString(url);
  } catch (error) {
    throw new Error(`EVENTSTORE_URL is not a valid EventStoreDB connection string: ${messageOf(error)}`, {
      cause: error,
    });
  }
  try {
    for await (const _ of client.readAll({ maxCount: 1, deadline: options.checkDeadlineMs ?? 5_000 })) break;
  } catch (error) {
    await client.dispose().catch(() => {});
    throw new Error(`EventStoreDB at EVENTSTORE_URL (${redact(url)}) cannot be reached: ${messageOf(error)}`, {
      cause: error,
    });
  }
  return client;
}

/** A store on its own client (connectEsdb), which close() disposes of. */
export async function openEsdbEventStore<E extends DomainEvent = AnyEvent>(
  url: string,
  options: Omit<EsdbEventStoreOptions<E>, 'ownsClient'> & { checkDeadlineMs?: number },
): Promise<EsdbEventStore<E>> {
  const client = await connectEsdb(url, options);
  try {
    return new EsdbEventStore<E>(client, { ...options, ownsClient: true });
  } catch (error) {
    await client.dispose().catch(() => {});
    throw error;
  }
}

interface SubscriptionSettings<E extends DomainEvent> {
  after: number;
  maxBatchSize: number;
  decode: (resolved: AllStreamResolvedEvent) => RecordedEvent<E> | undefined;
  onError: (error: unknown) => void;
  onEnd: () => void;
}

/**
 * A catch-up subscription on the server's filtered $all stream, read in paused mode: whatever the
 * client holds (up to maxBatchSize) goes to the handler as one batch, and the next batch is taken
 * once the handler's promise settles. Events at or before the last delivered position are dropped.
 */
class EsdbSubscription<E extends DomainEvent> implements Subscription {
  private stopped = false;
  private failure: unknown;
  private ended = false;
  private wake: (() => void) | undefined;
  private readonly running: Promise<void>;

  constructor(
    private readonly source: AllStreamSubscription,
    private readonly handler: BatchHandler<E>,
    private readonly settings: SubscriptionSettings<E>,
  ) {
    const poke = () => this.wake?.();
    source.on('readable', poke);
    source.on('end', () => {
      this.ended = true;
      poke();
    });
    source.on('error', (error: unknown) => {
      this.failure ??= error;
      poke();
    });
    this.running = this.run();
  }

  async close(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.wake?.();
      await this.source.unsubscribe().catch(() => {});
    }
    await this.running;
  }

  private async run(): Promise<void> {
    let position = this.settings.after;
    try {
      while (!this.stopped) {
        const batch: RecordedEvent<E>[] = [];
        let resolved: AllStreamResolvedEvent | null;
        while (batch.length < this.settings.maxBatchSize && (resolved = this.source.read() as typeof resolved)) {
          const event = this.settings.decode(resolved);
          if (!event || event.position <= position) continue;
          position = event.position;
          batch.push(event);
        }
        if (batch.length > 0) {
          await this.handler(batch);
          continue;
        }
        if (this.failure !== undefined) throw mapError(this.failure);
        if (this.ended) throw new StoreUnavailableError(EVENTSTORE, new Error('the server ended the subscription'));
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
      }
    } catch (error) {
      if (!this.stopped) {
        this.stopped = true;
        await this.source.unsubscribe().catch(() => {});
        this.settings.onError(error);
      }
    } finally {
      this.settings.onEnd();
    }
  }
}

function toEsdbExpected(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'any') return esdb().ANY;
  if (expected === 'no_stream') return esdb().NO_STREAM;
  if (expected === 'stream_exists') return esdb().STREAM_EXISTS;
  if (typeof expected === 'number' && Number.isInteger(expected) && expected >= 0) return BigInt(expected);
  throw new TypeError(`invalid expectedRevision: ${String(expected)}`);
}

/** A log position as the port's number; refuses one a double cannot hold exactly. */
export function toPosition(position: Position): number {
  if (position.commit > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(
      `EventStoreDB commit position ${position.commit} is beyond 2^53: positions would lose precision`,
    );
  }
  return Number(position.commit);
}

/** The log position of an event this store returned (commit and prepare positions are equal). */
function fromNumber(position: number): Position {
  return { commit: BigInt(position), prepare: BigInt(position) };
}

function checkPosition(position: number): number {
  if (!Number.isSafeInteger(position) || position < 0) {
    throw new RangeError(`a position must be a non-negative integer, got ${position}`);
  }
  return position;
}

function checkMaxCount(maxCount: number | undefined): number | undefined {
  if (maxCount !== undefined && (!Number.isInteger(maxCount) || maxCount < 0)) {
    throw new RangeError(`maxCount must be a non-negative integer, got ${maxCount}`);
  }
  return maxCount;
}

/**
 * The client's error class for an error: some calls (appends on a channel that never connected)
 * reject with the raw gRPC error, which the client's own conversion turns into its class.
 */
function asCommandError(error: unknown): unknown {
  return error instanceof Error ? esdb().convertToCommandError(error) : error;
}

function isCommandError(error: unknown, type: ErrorType): boolean {
  const converted = asCommandError(error);
  return converted instanceof Error && (converted as { type?: unknown }).type === type;
}

/** Transient client errors become StoreUnavailableError; the others are passed on as they are. */
export function mapError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  const converted = asCommandError(error);
  const type = converted instanceof Error ? (converted as { type?: unknown }).type : undefined;
  return typeof type === 'string' && transientTypes().has(type)
    ? new StoreUnavailableError(EVENTSTORE, converted)
    : error;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The connection string without its credentials (`esdb://user:pass@host` → `esdb://***@host`). */
export function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

function defaultOnError(error: unknown): void {
  const reason = error instanceof Error ? error : new Error(String(error));
  process.emitWarning(reason, { code: 'ESDB_EVENT_STORE_SUBSCRIPTION_STOPPED' });
}
