/**
 * The main thread's load, shared with worker threads: over the last LOAD_SAMPLE_MS, in thousandths,
 * in a SharedArrayBuffer the main thread updates and any thread reads without a message.
 *
 * - **Its load**: the share of the time it was running or ready to run and waiting for a CPU, from
 *   Linux's scheduler statistics of the thread (`/proc/thread-self/schedstat`). Where those cannot
 *   be read, its event loop's utilisation (the share of time it was not waiting for I/O or timers),
 *   which counts a wake-up that waits for a CPU as idle time and so reads low when the CPUs are
 *   contended (decision 102).
 * - **Its wait**: the share of the time it was ready to run and waited for a CPU; 0 where the
 *   scheduler statistics cannot be read.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

export const LOAD_SAMPLE_MS = 100;

const LOAD = 0;
const WAIT = 1;
const SCHEDSTAT = '/proc/thread-self/schedstat';

/** The calling thread's time on a CPU and waiting for one, in ns, and the time of reading; undefined off Linux. */
export const schedstat = (): { runNs: number; waitNs: number; atNs: number } | undefined => {
  try {
    const [run, wait] = readFileSync(SCHEDSTAT, 'ascii').split(' ');
    const runNs = Number(run);
    const waitNs = Number(wait);
    if (!Number.isFinite(runNs) || !Number.isFinite(waitNs)) return undefined;
    return { runNs, waitNs, atNs: Number(process.hrtime.bigint()) };
  } catch {
    return undefined;
  }
};

const thousandths = (share: number) => Math.round(Math.min(1, Math.max(0, share)) * 1_000);

let shared: Int32Array | undefined;

/** The buffer the main thread keeps its load in (sampling starts with the first call; the timer keeps no process alive). */
export const mainThreadLoad = (): SharedArrayBuffer => {
  if (!isMainThread) throw new Error('mainThreadLoad() samples the main thread: call it there');
  if (!shared) {
    const view = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    let lastLoop = performance.eventLoopUtilization();
    let lastStat = schedstat();
    const scheduled = lastStat !== undefined;
    setInterval(() => {
      const loop = performance.eventLoopUtilization();
      const stat = scheduled ? schedstat() : undefined;
      if (lastStat && stat && stat.atNs > lastStat.atNs) {
        const elapsed = stat.atNs - lastStat.atNs;
        const waited = stat.waitNs - lastStat.waitNs;
        Atomics.store(view, LOAD, thousandths((stat.runNs - lastStat.runNs + waited) / elapsed));
        Atomics.store(view, WAIT, thousandths(waited / elapsed));
      } else {
        Atomics.store(view, LOAD, thousandths(performance.eventLoopUtilization(loop, lastLoop).utilization));
      }
      lastLoop = loop;
      lastStat = stat;
    }, LOAD_SAMPLE_MS).unref();
    shared = view;
  }
  return shared.buffer as SharedArrayBuffer;
};

/** A reader of the load in `buffer`, from 0 to 1. */
export const loadReader = (buffer: SharedArrayBuffer): (() => number) => {
  const view = new Int32Array(buffer);
  return () => Atomics.load(view, LOAD) / 1_000;
};

/** A reader of the share of time the main thread waited for a CPU, from 0 to 1 (0 where unknown). */
export const waitReader = (buffer: SharedArrayBuffer): (() => number) => {
  const view = new Int32Array(buffer);
  return () => Atomics.load(view, WAIT) / 1_000;
};
