/**
 * What a worker thread of the service tells the operating system about itself (Linux only; best
 * effort elsewhere and on failure). A thread is a task with its own id there, read from
 * `/proc/thread-self`: its name (`comm`, shown by `top -H`, `ps -L` and per-thread CPU counters
 * under `/proc/<pid>/task/`) and its scheduling priority are its own.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/** Longest thread name Linux keeps (`comm` holds 15 bytes and a terminating zero). */
const THREAD_NAME_MAX = 15;

/** The calling thread's task id, or undefined off Linux. */
const taskId = (): number | undefined =>
  process.platform === 'linux' ? Number(path.basename(fs.readlinkSync('/proc/thread-self'))) : undefined;

/**
 * Names the calling thread (cut to THREAD_NAME_MAX bytes), so that the operator and the bench can
 * tell the service's threads apart. Returns whether it was named.
 */
export const nameThread = (name: string): boolean => {
  if (process.platform !== 'linux') return false;
  try {
    fs.writeFileSync('/proc/thread-self/comm', Buffer.from(name).subarray(0, THREAD_NAME_MAX));
    return true;
  } catch {
    return false;
  }
};

/**
 * Lowers the calling thread's scheduling priority to `nice` (0: unchanged): when the CPU is
 * short, the kernel runs the threads that answer requests first. Throws when the kernel refuses.
 */
export const lowerThreadPriority = (nice: number): void => {
  if (nice === 0) return;
  const tid = taskId();
  if (tid !== undefined) os.setPriority(tid, nice);
};

/** The longest `chrt` may take before the thread gives up on the idle class. */
const CHRT_TIMEOUT_MS = 5_000;

/**
 * Puts the calling thread in Linux's idle scheduling class (`SCHED_IDLE`, through util-linux's
 * `chrt`; Node has no call for it). The kernel gives such a thread the smallest weight there is,
 * so it still runs, slowly, when every CPU is busy; and when it places a thread that wakes up, it
 * counts a CPU that runs only idle-class threads as idle, where a thread at nice 10 keeps its CPU
 * looking busy and the woken thread lands beside the request thread instead (decision 100).
 * Resolves whether it did: false off Linux, without `chrt`, or when the kernel refuses.
 */
export const idleThreadClass = async (): Promise<boolean> => {
  const tid = taskId();
  if (tid === undefined) return false;
  try {
    await promisify(execFile)('chrt', ['--idle', '--pid', '0', String(tid)], { timeout: CHRT_TIMEOUT_MS });
    return true;
  } catch {
    return false;
  }
};
