/**
 * The main thread's load, shared with worker threads: the event loop's utilisation (the share of
 * time it was not waiting for I/O or timers) over the last LOAD_SAMPLE_MS, in thousandths, in a
 * SharedArrayBuffer the main thread updates and any thread reads without a message.
 */
import { performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

export const LOAD_SAMPLE_MS = 100;

let shared: Int32Array | undefined;

/** The buffer the main thread keeps its load in (sampling starts with the first call; the timer keeps no process alive). */
export const mainThreadLoad = (): SharedArrayBuffer => {
  if (!isMainThread) throw new Error('mainThreadLoad() samples the main thread: call it there');
  if (!shared) {
    const view = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
    let last = performance.eventLoopUtilization();
    setInterval(() => {
      const now = performance.eventLoopUtilization();
      Atomics.store(view, 0, Math.round(performance.eventLoopUtilization(now, last).utilization * 1_000));
      last = now;
    }, LOAD_SAMPLE_MS).unref();
    shared = view;
  }
  return shared.buffer as SharedArrayBuffer;
};

/** A reader of the load in `buffer`, from 0 to 1. */
export const loadReader = (buffer: SharedArrayBuffer): (() => number) => {
  const view = new Int32Array(buffer);
  return () => Atomics.load(view, 0) / 1_000;
};
