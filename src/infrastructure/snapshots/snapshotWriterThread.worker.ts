/**
 * The snapshot writer thread (see snapshotWriterThread.ts): per snapshots file, a connection of
 * its own (opened at the file's first save, without a filter of stored keys: the saving store's
 * filter marks each entry), on which each `save` message's window is written as it comes, in one
 * transaction, and answered `saved` (each save's outcome) or `failed` (the window's transaction
 * failed); `close` closes the file's connection and answers `closed`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority, nameThread } from '../threadIdentity.ts';
import { SqliteSnapshotStore } from './sqliteSnapshotStore.ts';
import type { FromSnapshotWriter, ToSnapshotWriter } from './snapshotWriterThread.ts';
import { toWireError } from '../wireError.ts';

const port = parentPort!;
const send = (message: FromSnapshotWriter) => port.postMessage(message);

const stores = new Map<number, SqliteSnapshotStore>();

const handle = async (message: ToSnapshotWriter): Promise<void> => {
  if (message.type === 'close') {
    const store = stores.get(message.id);
    stores.delete(message.id);
    try {
      await store?.close();
    } catch {
      // its directory was removed: nothing left to close
    }
    send({ type: 'closed', seq: message.seq });
    return;
  }
  try {
    let store = stores.get(message.id);
    if (!store) {
      store = SqliteSnapshotStore.open(message.file, { filterKeys: false });
      stores.set(message.id, store);
    }
    const outcomes = store
      .saveWindow(message.saves)
      .map((outcome) => ('error' in outcome ? { error: toWireError(outcome.error) } : outcome));
    send({ type: 'saved', seq: message.seq, outcomes });
  } catch (error) {
    send({ type: 'failed', seq: message.seq, error: toWireError(error) });
  }
};

nameThread('snapshot-writer');
try {
  lowerThreadPriority((workerData as { nice: number }).nice);
} catch {
  // the kernel refused: the thread runs at the process's priority
}
port.on('message', (message: ToSnapshotWriter) => void handle(message));
