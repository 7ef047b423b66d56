/**
 * Embedded, file-backed EventStore on SQLite (better-sqlite3). Durable (WAL, synchronous=FULL),
 * group-committed appends (see sqliteGroupCommit.ts) written by a writer thread of the store's own
 * (sqliteWriterThread.ts; or on the calling thread, `writer: 'inline'`), catch-up subscriptions
 * that are handed this process's commits and poll for other processes' commits (see
 * sqliteSubscription.ts). This thread's connection reads.
 * Several processes may open the same file: writes use BEGIN IMMEDIATE + busy_timeout.
 */
import { randomUUID } from 'node:crypto';
import type { MessagePort } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type {
  AppendResult,
  BatchHandler,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOfTypesOptions,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
  TypedPage,
  Upcaster,
} from '../../core/eventStore.ts';
import { GroupCommitter, type CommittedEvents, type FlushInfo } from './sqliteGroupCommit.ts';
import {
  foldRowToEvent,
  openDatabase,
  prepareStatements,
  rowToEvent,
  type EventInsert,
  type EventRow,
  type Statements,
} from './sqliteSchema.ts';
import type { AnyEvent, DomainEvent } from '../../core/decider.ts';
import { SqliteSubscription } from './sqliteSubscription.ts';
import { closeWal } from '../sqliteWal.ts';
import { WriterThread, type WriterGroupsOptions } from './sqliteWriterThread.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';

export interface SqliteEventStoreOptions<E extends DomainEvent = AnyEvent> {
  /** Applied to every event read back (core/eventStore.ts `Upcaster`). Default: events as stored. */
  upcast?: Upcaster<E>;
  /** How often caught-up subscriptions look for other processes' commits. Default 200. */
  pollIntervalMs?: number;
  /** How long a write waits for another process's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
  /** Observer called after every group-commit transaction (metrics, tests). */
  onFlush?: (info: FlushInfo) => void;
  /** Called with the rows of every commit (the projector thread is handed them: projectorThread.ts). */
  onCommitted?: (committed: CommittedEvents) => void;
  /**
   * Where appends are committed: `thread` (default), by a writer thread with its own connection,
   * started at the first append, so that the calling thread keeps running while a batch is written
   * and fsynced; `inline`, by this connection on the calling thread (EVENT_STORE_WRITER=inline).
   */
  writer?: 'thread' | 'inline';
  /**
   * With the writer thread: start it and open this store's connection on it at once, rather than
   * at the first append, which would otherwise wait for both (about 0.1 s compiled; the service's
   * first apply after a start).
   */
  startWriter?: boolean;
  /**
   * With the writer thread: how stale the change token may be while the thread writes
   * (`externalChangeToken`). Default DEFAULT_TOKEN_FRESH_MS (sqliteWriterThread.ts).
   */
  tokenFreshMs?: number;
  /**
   * With the writer thread: projection groups it folds each commit into before answering it
   * (decision 087); their handles come from `writerGroup`. Ignored when this store commits on the
   * calling thread.
   */
  groupsOnWriter?: WriterGroupsOptions;
}

export interface SqlitePragmas {
  journalMode: string;
  /** 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA. */
  synchronous: number;
  busyTimeoutMs: number;
  /** WAL pages after which a commit checkpoints (sqliteWal.ts). */
  walAutocheckpoint: number;
}

const DEFAULT_MAX_BATCH_SIZE = 500;
/** SQLite's "no limit" for LIMIT. */
const NO_LIMIT = -1;

export class SqliteEventStore<E extends DomainEvent = AnyEvent> implements EventStore<E> {
  /** A stored row as the current version of its event (JSON parsed, then upcast). */
  private readonly decode: (row: EventRow) => RecordedEvent<E>;
  private readonly statements: Statements;
  /** Exactly one of them commits the appends. */
  private readonly committer: GroupCommitter | undefined;
  private readonly writer: WriterThread | undefined;
  private readonly subscriptions = new Set<SqliteSubscription<E>>();
  private readonly upcasts: boolean;
  private readonly pollIntervalMs: number;
  /** No new subscriptions once close() started; no appends/reads once it has flushed. */
  private closing: Promise<void> | undefined;
  private closed = false;
  private token = 0;
  private tokenTurn: NodeJS.Immediate | undefined;

  static open<E extends DomainEvent = AnyEvent>(
    filePath: string,
    options: SqliteEventStoreOptions<E> = {},
  ): SqliteEventStore<E> {
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    const db = openDatabase(filePath, { busyTimeoutMs });
    return new SqliteEventStore<E>(db, { ...options, busyTimeoutMs });
  }

  private constructor(
    private readonly db: Database.Database,
    private readonly options: SqliteEventStoreOptions<E>,
  ) {
    const upcast = options.upcast;
    // Without an upcaster the stored JSON is taken as the current event: the write side wrote it.
    this.decode = upcast ? (row) => upcast(rowToEvent(row)) : (row) => rowToEvent(row) as RecordedEvent<E>;
    this.upcasts = upcast !== undefined;
    this.pollIntervalMs = options.pollIntervalMs ?? 200;
    this.statements = prepareStatements(db);
    const onCommitted = (info: FlushInfo, committed: CommittedEvents) => {
      options.onFlush?.(info);
      if (committed.rows.length > 0) options.onCommitted?.(committed);
      this.offerToSubscriptions(committed);
    };
    if (options.writer === 'inline' || db.memory) {
      this.committer = new GroupCommitter(db, this.statements, onCommitted);
    } else {
      const statements = this.statements;
      this.writer = new WriterThread({
        file: db.name,
        busyTimeoutMs: options.busyTimeoutMs ?? 5000,
        walAutocheckpoint: Number(db.pragma('wal_autocheckpoint', { simple: true })),
        dataVersion: () => statements.dataVersion.get()!,
        headPosition: () => statements.headPosition.get()!.head,
        freshMs: options.tokenFreshMs,
        onCommitted,
        groups: options.groupsOnWriter,
      });
      if (options.startWriter) this.writer.start();
    }
  }

  appendToStream(
    streamId: string,
    events: NewEvent<E>[],
    options: { expectedRevision?: ExpectedRevision } = {},
  ): Promise<AppendResult> {
    return this.appendToStreams([{ streamId, events, expectedRevision: options.expectedRevision }]).then(
      ([result]) => result!,
    );
  }

  appendToStreams(appends: StreamAppend<E>[]): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      if (this.closed) throw new Error('SqliteEventStore is closed');
      if (appends.length === 0) throw new TypeError('appendToStreams needs at least one stream');
      if (new Set(appends.map((a) => a.streamId)).size !== appends.length)
        throw new TypeError('appendToStreams: each stream at most once');
      // Checked and serialized now: a bad event rejects only its own append, before it joins a batch.
      const parts = appends.map(({ streamId, events, expectedRevision = 'any' }) => {
        validateExpectedRevision(expectedRevision);
        return { streamId, events: events.map(toInsert), expectedRevision };
      });
      (this.writer ?? this.committer!).enqueue({ parts, resolve, reject });
    });
  }

  /**
   * With the writer thread: has it post each commit's rows on a port `feed` makes, the commits of
   * `windowMs` in one message (see WriterThread.forwardCommits), for a thread that would otherwise
   * be handed them by this one. False (nothing set up) when this store commits on the calling
   * thread.
   */
  forwardCommits(feed: () => MessagePort | undefined, windowMs = 0): boolean {
    if (!this.writer) return false;
    this.writer.forwardCommits(feed, windowMs);
    return true;
  }

  /**
   * The handle of a projection group the writer thread runs (option `groupsOnWriter`), once it has
   * started; undefined when this store commits on the calling thread or runs no such group.
   */
  async writerGroup(name: string): Promise<ProjectorHandle | undefined> {
    if (!this.writer || !this.options.groupsOnWriter?.groups.includes(name)) return undefined;
    return this.writer.group(name);
  }

  /**
   * Rows another connection committed, as its store reported them (`onCommitted`): handed to the
   * subscriptions like this store's own commits, so a caught-up one need not read them back. A
   * subscription takes them only where they continue its checkpoint, and reads the store otherwise.
   */
  offerExternalCommit(committed: CommittedEvents): void {
    this.offerToSubscriptions(committed);
  }

  /** Has every subscription read the store at its next turn, rather than wait for handed-over rows or its poll. */
  catchUpSubscriptions(): void {
    for (const subscription of this.subscriptions) subscription.catchUp();
  }

  /** Committed rows, handed over as such: a caught-up subscription takes them without reading them back. */
  private offerToSubscriptions(committed: CommittedEvents): void {
    if (committed.rows.length > 0) for (const subscription of this.subscriptions) subscription.offer(committed);
  }

  async readStream<T extends E = E>(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent<T>[]> {
    this.assertOpen();
    const fromRevision = options.fromRevision ?? 0;
    const maxCount = limit(options.maxCount);
    // One index seek answers "nothing there" (a new stream, a cached aggregate that is up to date)
    // without preparing a read of rows.
    const revision = this.statements.streamRevision.get(streamId)?.revision ?? -1;
    if (revision < fromRevision) return [];
    const rows = this.statements.readStream.all(streamId, fromRevision, maxCount);
    // The stream's events are of the part `T` of the union its caller names (see the port).
    return rows.map(this.decode) as RecordedEvent<T>[];
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent<E>[]> {
    this.assertOpen();
    return this.readAfter(options.after ?? 0, limit(options.maxCount));
  }

  /**
   * The other events of the page stay in SQLite: neither copied out nor parsed; of the events
   * asked for, only the type, data and position are read. With an upcaster (which may rename a
   * stored type) every event of the page is decoded whole, then filtered.
   */
  async readAllOfTypes(options: ReadAllOfTypesOptions): Promise<TypedPage<E>> {
    this.assertOpen();
    const after = options.after ?? 0;
    const maxCount = limit(options.maxCount);
    if (this.upcasts) {
      const page = this.readAfter(after, maxCount);
      const types = new Set(options.types);
      return {
        events: page.filter((e) => types.has(e.type)),
        scanned: page.length,
        lastPosition: page.at(-1)?.position ?? after,
      };
    }
    return this.db.transaction(() => {
      const { scanned, last } = this.statements.readAllWindow.get(after, maxCount)!;
      if (scanned === 0 || last === null) return { events: [], scanned: 0, lastPosition: after };
      const rows = this.statements.foldAllOfTypes.all(after, last, JSON.stringify(options.types));
      return { events: rows.map(foldRowToEvent<E>), scanned, lastPosition: last };
    })();
  }

  /**
   * Changes only when another connection (another process) commits. With the writer thread, built
   * from the head positions the thread reads under its write lock and publishes, and from this
   * connection's data_version only when the thread has not read the head in the last
   * `tokenFreshMs` (sqliteWriterThread.ts): a foreign commit is seen at the latest in the first turn
   * `tokenFreshMs` after it is visible. Inline, SQLite's data_version of this connection: in the
   * first turn after. Settled once per event-loop turn, since a read of this connection costs tens
   * of microseconds. Writes stay safe regardless (the expected-revision check); a read-only
   * decision may be that stale.
   */
  externalChangeToken(): number {
    this.assertOpen();
    if (this.tokenTurn === undefined) {
      this.token = this.writer ? this.writer.token() : this.statements.dataVersion.get()!;
      this.tokenTurn = setImmediate(() => {
        this.tokenTurn = undefined;
      });
    }
    return this.token;
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    return this.statements.headPosition.get()!.head;
  }

  subscribeToAll(options: SubscribeOptions, handler: BatchHandler<E>): Subscription {
    if (this.closing) throw new Error('SqliteEventStore is closed');
    const maxBatchSize = options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) {
      throw new RangeError(`maxBatchSize must be a positive integer, got ${maxBatchSize}`);
    }
    const subscription: SqliteSubscription<E> = new SqliteSubscription<E>(
      {
        readAfter: (after, maxCount) => this.readAfter(after, maxCount),
        decode: this.decode,
        // an upcaster may rename a stored type: then every event is decoded and delivered
        ...(this.upcasts ? {} : { firstOfTypes: (after, maxScan, types) => this.firstOfTypes(after, maxScan, types) }),
      },
      handler,
      {
        after: options.after ?? 0,
        maxBatchSize,
        pollIntervalMs: this.pollIntervalMs,
        onError: options.onError ?? defaultOnError,
        ...(options.onlyTypes ? { onlyTypes: options.onlyTypes } : {}),
        onEnd: () => this.subscriptions.delete(subscription),
      },
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Stops the subscriptions (waiting for running handler calls, which may still append),
   * writes every pending append (and ends the writer thread), then closes the database. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    await Promise.all([...this.subscriptions].map((subscription) => subscription.close()));
    this.closed = true;
    clearImmediate(this.tokenTurn);
    this.committer?.flush();
    await this.writer?.close();
    closeWal(this.db);
  }

  /** Effective durability settings of this connection (diagnostics, tests). */
  pragmas(): SqlitePragmas {
    this.assertOpen();
    return {
      journalMode: String(this.db.pragma('journal_mode', { simple: true })),
      synchronous: Number(this.db.pragma('synchronous', { simple: true })),
      busyTimeoutMs: Number(this.db.pragma('busy_timeout', { simple: true })),
      walAutocheckpoint: Number(this.db.pragma('wal_autocheckpoint', { simple: true })),
    };
  }

  private readAfter(after: number, maxCount: number): RecordedEvent<E>[] {
    return this.statements.readAll.all(after, maxCount).map(this.decode);
  }

  /**
   * SubscriptionSource.firstOfTypes over the positions (after, after + maxScan], in one read
   * transaction: the head and the look see the same commits. `get` steps the typed read only to
   * its first row, so only the rows' types are read until it, and only it is decoded.
   */
  private firstOfTypes(
    after: number,
    maxScan: number,
    types: readonly string[],
  ): { event?: RecordedEvent<E>; through: number } {
    return this.db.transaction(() => {
      const head = this.statements.headPosition.get()!.head;
      if (head <= after) return { through: after };
      const upTo = Math.min(head, after + maxScan);
      const row = this.statements.readAllOfTypes.get(after, upTo, JSON.stringify(types));
      return row ? { event: this.decode(row), through: row.position } : { through: upTo };
    })();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('SqliteEventStore is closed');
  }
}

/** Millisecond and sequence of the last generated id (see eventId). */
let lastIdMs = 0;
let idSequence = 0;

/**
 * A UUID version 7 (RFC 9562): 48-bit Unix milliseconds, a 12-bit sequence within the millisecond,
 * 62 random bits. Ids generated by one process increase, so the `events.id` index grows at its
 * right edge instead of dirtying a random leaf page per event (fewer pages written per commit).
 * The wall clock here only orders ids; no domain time comes from it.
 */
export function eventId(): string {
  const now = Date.now();
  if (now > lastIdMs) {
    lastIdMs = now;
    idSequence = 0;
  } else if (++idSequence > 0xfff) {
    lastIdMs += 1; // 4,096 ids in one millisecond: borrow the next one, order stays increasing
    idSequence = 0;
  }
  const time = lastIdMs.toString(16).padStart(12, '0');
  // randomUUID's last 17 characters: the RFC 4122 variant nibble and 62 random bits.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${idSequence.toString(16).padStart(3, '0')}-${randomUUID().slice(19)}`;
}

function toInsert(event: NewEvent<DomainEvent>): EventInsert {
  if (typeof event.type !== 'string' || event.type === '') {
    throw new TypeError('event type must be a non-empty string');
  }
  return {
    id: event.id ?? eventId(),
    type: event.type,
    data: JSON.stringify(event.data ?? {}),
    metadata: JSON.stringify(event.metadata ?? {}),
  };
}

function validateExpectedRevision(expected: ExpectedRevision): void {
  if (
    typeof expected === 'number'
      ? Number.isInteger(expected) && expected >= 0
      : expected === 'any' || expected === 'no_stream' || expected === 'stream_exists'
  )
    return;
  throw new TypeError(`invalid expectedRevision: ${String(expected)}`);
}

function limit(maxCount: number | undefined): number {
  if (maxCount === undefined) return NO_LIMIT;
  if (!Number.isInteger(maxCount) || maxCount < 0) {
    throw new RangeError(`maxCount must be a non-negative integer, got ${maxCount}`);
  }
  return maxCount;
}

function defaultOnError(error: unknown): void {
  const reason = error instanceof Error ? error : new Error(String(error));
  process.emitWarning(reason, { code: 'SQLITE_EVENT_STORE_SUBSCRIPTION_STOPPED' });
}
