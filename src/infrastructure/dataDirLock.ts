import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Clock } from '../domain/clock.ts';

/** The file whose lock says a process owns DATA_DIR. */
export const dataDirLockFile = (dataDir: string): string => path.join(dataDir, 'service.lock');

/** Another process (a running service, a replay) holds DATA_DIR. */
export class DataDirInUse extends Error {
  constructor(readonly dataDir: string) {
    super(
      `DATA_DIR ${dataDir} is in use by another voucher service process or replay (it holds ${dataDirLockFile(dataDir)}); stop it first`,
    );
    this.name = 'DataDirInUse';
  }
}

export interface DataDirLock {
  /** Lets go of DATA_DIR (also done by the operating system when the process ends, however it ends). */
  release(): void;
}

/**
 * Takes DATA_DIR for this process: an SQLite database, `DATA_DIR/service.lock`, opened in
 * `locking_mode=EXCLUSIVE` and written once, so this connection holds SQLite's exclusive file lock
 * until it closes. Another process trying the same gets SQLITE_BUSY at once (no busy wait):
 * `DataDirInUse`. The lock is a file lock, so the operating system drops it when the process
 * exits, even by SIGKILL: no stale pid file to clean up after a crash.
 *
 * The service takes it for its whole life and `npm run replay` for the rebuild, so neither runs
 * while the other does, nor two services on one DATA_DIR. The keys CLI does not take it (it is
 * meant to work while the service runs).
 */
export const lockDataDir = (dataDir: string, holder: string, clock: Clock): DataDirLock => {
  fs.mkdirSync(dataDir, { recursive: true });
  const db = new Database(dataDirLockFile(dataDir), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY');
    db.exec(
      'CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER, what TEXT, since TEXT)',
    );
    db.prepare('INSERT OR REPLACE INTO holder (id, pid, what, since) VALUES (1, ?, ?, ?)').run(
      process.pid,
      holder,
      clock.now().toISOString(),
    );
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new DataDirInUse(dataDir);
    throw error;
  }
  return { release: () => db.close() };
};
