import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The nice value background threads (the projector thread, the WAL checkpointer) give themselves:
 * when they and the event loop both want one of the cores, the scheduler runs the event loop first,
 * so a request is not kept waiting behind an analytics fold; an idle core still runs them at once.
 */
export const BACKGROUND_THREAD_NICE = 10;

/**
 * Lowers the calling thread's scheduling priority to `nice` (Linux: a thread is scheduled on its
 * own, and /proc/thread-self names its id). Elsewhere, or if the system refuses, it changes
 * nothing and returns false.
 */
export const lowerThisThreadPriority = (nice = BACKGROUND_THREAD_NICE): boolean => {
  try {
    const tid = Number(path.basename(fs.readlinkSync('/proc/thread-self')));
    if (!Number.isSafeInteger(tid) || tid <= 0) return false;
    os.setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
};
