/**
 * The writer thread of the SQLite event stores (see sqliteWriterThread.ts): per store, its own
 * connection to the events file (WAL, synchronous=FULL) and the group commit of sqliteGroupCommit.ts.
 *
 * Messages (each naming its store by `id`): `open`, `append` (the appends of one turn of the
 * opening thread), `forward` and `close`. Each message handled takes every message already waiting
 * with it; the appends of one store among them are written by one transaction, answered by `done`
 * with the outcomes in order and the committed rows, which then also go to the store's forward
 * port if it has one (`forward` sets it, replacing and closing the one before), gathered for the
 * port's window and posted once per window (decision 111). `close` writes what came before it,
 * posts what the forward window holds and closes the forward port, stops the store's projection
 * groups, closes the store's connection and answers `closed`.
 *
 * A store opened with projection groups (`WriterOpen.groups`, decision 087) has them started
 * (answered by `ready`) and handed the rows of each commit. Its `done` is held until every group
 * has folded the commit, which takes the microtasks right after it, so the opening thread finds
 * its read models current once the appends resolve. A group that is slower (catching up, or
 * failing and retrying) holds it at most FOLD_WAIT_MS: the opening thread's waits then take the
 * group's checkpoint from shared memory or its `checkpoint` messages (publishedGroup.ts).
 */
import { parentPort, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { GroupCommitter, type CommittedEvents, type FlushInfo, type StreamPart } from './sqliteGroupCommit.ts';
import { openDatabase, prepareStatements, type Statements } from './sqliteSchema.ts';
import { closeWal } from '../sqliteWal.ts';
import { nameThread } from '../threadIdentity.ts';
import { ThreadGroups } from '../projector/threadGroups.ts';
import { PROJECTION_GROUPS } from '../../projections/index.ts';
import { createLogger } from '../../logger.ts';
import {
  FOREIGN,
  HEAD,
  LOOKED_AT,
  accountHead,
  type ForwardedCommits,
  type FromWriter,
  type ToWriter,
  type WireOutcome,
  type WriterOpen,
} from './sqliteWriterThread.ts';
import { toWireError, type WireError } from '../wireError.ts';
import { WindowGatherer } from '../windowGatherer.ts';

/** The longest a commit's answer waits for the store's projection groups to fold it. */
const FOLD_WAIT_MS = 20;

const port = parentPort!;
const send = (message: FromWriter) => port.postMessage(message);
/** Each store's forward port, and the window of commits it gathers before posting them there. */
const forwards = new Map<number, { port: MessagePort; window: WindowGatherer<CommittedEvents> }>();

/** Posts what the store's forward window holds, then closes its port. */
const endForward = (id: number): void => {
  const forward = forwards.get(id);
  forwards.delete(id);
  forward?.window.flush();
  forward?.port.close();
};

/** One store's connection and group commit. */
class StoreWriter {
  private readonly db;
  private readonly shared: BigInt64Array;
  /** When the current transaction began to read the head (see the change token). */
  private looking = 0n;
  private readonly committer: GroupCommitter;
  private readonly head: Statements['headPosition'];
  /** The head the current transaction leads to, -1 until it is about to commit. */
  private ending = -1;
  /** What the current transaction committed (at most one entry). */
  private readonly commits: Array<{ info: FlushInfo; committed: CommittedEvents }> = [];
  /** Whether answers wait for projection groups (not once they failed to start), and once started, the groups. */
  private hosting: boolean;
  private groups: ThreadGroups | undefined;
  /** Answers held until the groups have folded up to `position`, oldest first. */
  private readonly held: Array<{ position: number; message: FromWriter }> = [];
  private holdTimer: NodeJS.Timeout | undefined;
  private readonly groupsStarting: Promise<void>;

  constructor(
    private readonly id: number,
    open: WriterOpen,
  ) {
    this.db = openDatabase(open.file, { busyTimeoutMs: open.busyTimeoutMs });
    this.db.pragma(`wal_autocheckpoint = ${open.walAutocheckpoint}`);
    this.shared = new BigInt64Array(open.shared);
    const shared = this.shared;
    const statements = prepareStatements(this.db);
    this.head = statements.headPosition;
    this.committer = new GroupCommitter(
      this.db,
      statements,
      (info, committed) => this.commits.push({ info, committed }),
      {
        beginning: () => {
          this.looking = process.hrtime.bigint();
        },
        began: (after) => {
          accountHead(shared, after); // above HEAD: another connection committed
          Atomics.store(shared, LOOKED_AT, this.looking); // once counted: see the token
        },
        ending: (head) => {
          this.ending = head;
          Atomics.store(shared, HEAD, BigInt(head)); // before COMMIT: see the token
        },
      },
    );
    this.hosting = open.groups !== undefined;
    this.groupsStarting = open.groups ? this.startGroups(open.file, open.groups) : Promise.resolve();
  }

  private async startGroups(file: string, options: NonNullable<WriterOpen['groups']>): Promise<void> {
    try {
      const logger = createLogger(options.logLevel).child({ environment: options.environment, thread: 'writer' });
      const { readsFile, groups: names, pollIntervalMs, published } = options;
      const groups = await ThreadGroups.start(
        // no checkpoint of read.db on this thread: it would hold every append (ThreadGroupsOptions)
        { eventsFile: file, readsFile, groups: names, pollIntervalMs, published, readsWalAutocheckpoint: 0 },
        PROJECTION_GROUPS,
        logger,
        (group, position) => send({ type: 'checkpoint', id: this.id, group, position }),
      );
      groups.onAdvance = () => this.release(false);
      this.groups = groups;
      send({ type: 'ready', id: this.id });
      this.release(false);
    } catch (error) {
      send({ type: 'ready', id: this.id, error: toWireError(error) });
      this.hosting = false;
      this.release(true);
    }
  }

  /** Sends the held answers the groups have folded (all of them if `all`). */
  private release(all: boolean): void {
    const reached = this.groups?.checkpoint ?? -1;
    while (this.held.length > 0 && (all || this.held[0]!.position <= reached)) send(this.held.shift()!.message);
    if (this.held.length === 0) {
      clearTimeout(this.holdTimer);
      this.holdTimer = undefined;
    } else
      this.holdTimer ??= setTimeout(() => {
        this.holdTimer = undefined;
        this.release(true);
      }, FOLD_WAIT_MS);
  }

  /** Sends `message` once the groups have folded up to `position` (at once without groups). */
  private answer(message: FromWriter, position: number): void {
    if (!this.hosting) return send(message);
    this.held.push({ position, message });
    this.release(false);
  }

  commit(batch: StreamPart[][]): void {
    const outcomes: WireOutcome[] = [];
    this.ending = -1;
    this.commits.length = 0;
    for (const parts of batch)
      this.committer.enqueue({
        parts,
        resolve: (results) => outcomes.push({ ok: true, results }),
        reject: (error) => outcomes.push({ ok: false, error: toWireError(error) }),
      });
    this.committer.flush();
    const committed = this.commits.pop();
    if (!committed && this.ending !== -1) {
      // COMMIT itself failed after HEAD was raised: lower it to the head now, and change the token
      Atomics.store(this.shared, HEAD, BigInt(this.head.get()!.head));
      Atomics.add(this.shared, FOREIGN, 1n);
    }
    const rows = committed?.committed.rows ?? [];
    if (rows.length > 0) this.groups?.offer(committed!.committed);
    this.answer(
      {
        type: 'done',
        id: this.id,
        outcomes,
        info: committed?.info ?? { appends: batch.length, events: 0 },
        ...(committed ? { committed: committed.committed } : {}),
      },
      rows.at(-1)?.position ?? 0, // nothing stored: held only behind the answers before it
    );
    if (rows.length > 0) forwards.get(this.id)?.window.take(committed!.committed);
  }

  /** Stops the groups once they have folded every commit (their answers sent), then closes the connection. */
  async close(): Promise<void> {
    await this.groupsStarting;
    await this.groups?.stop();
    this.release(true);
    closeWal(this.db);
  }
}

/** A store whose connection could not be opened: its appends are rejected with that error. */
const stores = new Map<number, StoreWriter | WireError>();

const commit = (id: number, batch: StreamPart[][]): void => {
  const store = stores.get(id);
  if (store instanceof StoreWriter) return store.commit(batch);
  const error: WireError = store ?? { kind: 'error', name: 'Error', message: `no writer connection for store ${id}` };
  send({
    type: 'done',
    id,
    outcomes: batch.map(() => ({ ok: false, error })),
    info: { appends: batch.length, events: 0 },
  });
};

const handle = (first: ToWriter): void => {
  const batches = new Map<number, StreamPart[][]>();
  for (let message: ToWriter | undefined = first; message; message = receiveMessageOnPort(port)?.message as ToWriter) {
    if (message.type === 'open') {
      const { id, file, busyTimeoutMs, walAutocheckpoint, shared } = message;
      try {
        stores.set(id, new StoreWriter(id, { file, busyTimeoutMs, walAutocheckpoint, shared, groups: message.groups }));
      } catch (error) {
        stores.set(id, toWireError(error));
        if (message.groups) send({ type: 'ready', id, error: toWireError(error) });
      }
    } else if (message.type === 'forward') {
      endForward(message.id);
      const { port: forwardPort } = message;
      const window = new WindowGatherer<CommittedEvents>(message.windowMs, (commits) =>
        forwardPort.postMessage({ type: 'committed', commits } satisfies ForwardedCommits),
      );
      forwards.set(message.id, { port: forwardPort, window });
    } else if (message.type === 'append') {
      const batch = batches.get(message.id);
      if (batch) batch.push(...message.appends);
      else batches.set(message.id, [...message.appends]);
    } else {
      const batch = batches.get(message.id);
      batches.delete(message.id);
      if (batch) commit(message.id, batch);
      const store = stores.get(message.id);
      stores.delete(message.id);
      endForward(message.id);
      const closed = store instanceof StoreWriter ? store.close() : Promise.resolve();
      // a directory already removed leaves nothing to close
      void closed.catch(() => undefined).then(() => send({ type: 'closed', id: message.id }));
    }
  }
  for (const [id, batch] of batches) commit(id, batch);
};

nameThread('sqlite-writer');
port.on('message', handle);
