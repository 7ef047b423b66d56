/**
 * The writer thread of the SQLite event stores (see sqliteWriterThread.ts): per store, its own
 * connection to the events file (WAL, synchronous=FULL) and the group commit of sqliteGroupCommit.ts.
 *
 * Messages (each naming its store by `id`): `open`, `append` (the appends of one turn of the
 * opening thread), `forward` and `close`. Each message handled takes every message already waiting
 * with it; the appends of one store among them are written by one transaction, answered by `done`
 * with the outcomes in order and the committed rows, which then also go to the store's forward
 * port if it has one (`forward` sets it, replacing and closing the one before). `close` writes
 * what came before it, closes the store's connection and forward port and answers `closed`.
 */
import { parentPort, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { GroupCommitter, type CommittedEvents, type FlushInfo, type StreamPart } from './sqliteGroupCommit.ts';
import { openDatabase, prepareStatements, type Statements } from './sqliteSchema.ts';
import { closeWal } from '../sqliteWal.ts';
import { nameThread } from '../threadIdentity.ts';
import {
  FOREIGN,
  HEAD,
  accountHead,
  toWireError,
  type ForwardedCommit,
  type FromWriter,
  type ToWriter,
  type WireError,
  type WireOutcome,
  type WriterOpen,
} from './sqliteWriterThread.ts';

const port = parentPort!;
const send = (message: FromWriter) => port.postMessage(message);
/** Each store's forward port: where its commits' rows go after each answer. */
const forwards = new Map<number, MessagePort>();

/** One store's connection and group commit. */
class StoreWriter {
  private readonly db;
  private readonly shared: BigInt64Array;
  private readonly committer: GroupCommitter;
  private readonly head: Statements['headPosition'];
  /** The head the current transaction leads to, -1 until it is about to commit. */
  private ending = -1;
  /** What the current transaction committed (at most one entry). */
  private readonly commits: Array<{ info: FlushInfo; committed: CommittedEvents }> = [];

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
        began: (after) => accountHead(shared, after), // above HEAD: another connection committed
        ending: (head) => {
          this.ending = head;
          Atomics.store(shared, HEAD, BigInt(head)); // before COMMIT: see the token
        },
      },
    );
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
    send({
      type: 'done',
      id: this.id,
      outcomes,
      info: committed?.info ?? { appends: batch.length, events: 0 },
      ...(committed ? { committed: committed.committed } : {}),
    });
    if (committed && committed.committed.rows.length > 0)
      forwards
        .get(this.id)
        ?.postMessage({ type: 'committed', committed: committed.committed } satisfies ForwardedCommit);
  }

  close(): void {
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
        stores.set(id, new StoreWriter(id, { file, busyTimeoutMs, walAutocheckpoint, shared }));
      } catch (error) {
        stores.set(id, toWireError(error));
      }
    } else if (message.type === 'forward') {
      forwards.get(message.id)?.close();
      forwards.set(message.id, message.port);
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
      forwards.get(message.id)?.close();
      forwards.delete(message.id);
      try {
        if (store instanceof StoreWriter) store.close();
      } catch {
        // its directory was removed: nothing left to close
      }
      send({ type: 'closed', id: message.id });
    }
  }
  for (const [id, batch] of batches) commit(id, batch);
};

nameThread('sqlite-writer');
port.on('message', handle);
