/**
 * The durable ceiling's group commit (scripts/bench/ceiling.ts, CEILING_SYNC_FILE): bodies are
 * written to one file and synced, those that arrive during a write and sync together in the next.
 */
import fs from 'node:fs';

/** Bytes the sync file takes before its writes go back to its start (a WAL is reused the same way). */
const SYNC_FILE_BYTES = 32 * 1024 * 1024;

/**
 * Group commit onto one file: `commit(body)` resolves once `body` is written and synced (false if
 * the write or the sync failed). While a write and sync are under way, new bodies wait for the
 * next one.
 */
export const groupCommit = (file: string, fileBytes = SYNC_FILE_BYTES) => {
  const fd = fs.openSync(file, 'w');
  let at = 0;
  let syncing = false;
  let waiting: Array<{ body: Buffer; done: (ok: boolean) => void }> = [];
  const flush = () => {
    const batch = waiting;
    waiting = [];
    syncing = true;
    const data = Buffer.concat(batch.map((b) => b.body));
    if (at + data.length > fileBytes) at = 0;
    const position = at;
    at += data.length;
    const finish = (ok: boolean) => {
      for (const b of batch) b.done(ok);
      syncing = false;
      if (waiting.length > 0) flush();
    };
    fs.write(fd, data, 0, data.length, position, (writeError) => {
      if (writeError) finish(false);
      else fs.fsync(fd, (syncError) => finish(!syncError));
    });
  };
  return (body: Buffer): Promise<boolean> =>
    new Promise((resolve) => {
      waiting.push({ body, done: resolve });
      if (!syncing) flush();
    });
};
