/**
 * The snapshot writer thread (see snapshotWriterThread.ts): per snapshots file, a connection of
 * its own (opened at the file's first save, without a filter of stored keys: the saving store's
 * filter marks each entry), on which each `save` is written as it comes and answered `saved`
 * (whether it wrote) or `failed`; `close` closes the file's connection and answers `closed`.
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
    send({ type: 'saved', seq: message.seq, written: store.saveSerialised(message.save) });
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
