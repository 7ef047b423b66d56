/**
 * The thread that builds a snapshot file's filter of stored keys (storedKeys.ts): it reads every
 * key through a read-only connection of its own, sends the filter's buckets (or why it could not)
 * and ends. It runs at the lowest scheduling priority (nice 19): right after a start the service's
 * first requests need the CPUs more than the filter does.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { lowerThreadPriority, nameThread } from '../threadIdentity.ts';
import { filterOfFile, type StoredKeysMessage } from './storedKeys.ts';

const { file } = workerData as { file: string };
nameThread('snapshot-keys');
try {
  lowerThreadPriority(19);
} catch {
  // Best effort: without it the thread competes with the others, and builds the same filter.
}
const send = (message: StoredKeysMessage, transfer: ArrayBuffer[] = []) => parentPort!.postMessage(message, transfer);
try {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const { buckets } = filterOfFile(db);
    send({ buckets }, [buckets.buffer as ArrayBuffer]);
  } finally {
    db.close();
  }
} catch (error) {
  // An SQLite error loses its message when cloned to the other thread: send the message itself.
  send({ failed: `${(error as Error).message} (${(error as { code?: string }).code ?? 'no code'})` });
}
