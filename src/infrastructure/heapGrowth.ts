import v8 from 'node:v8';

/**
 * Sets how far V8 lets the JavaScript heap grow past what survived the last full garbage collection
 * before the next one, in percent, for every isolate of the process (the main thread's and the
 * worker threads'; V8 reads the setting at the end of each full collection). 0 keeps V8's own
 * heuristic, which under a steady allocation rate lets the heap grow to up to four times what
 * survives: memory the service holds and does not use (decision 064).
 */
export const limitHeapGrowth = (percent: number, setFlags: (flags: string) => void = v8.setFlagsFromString): void => {
  if (percent > 0) setFlags(`--heap-growing-percent=${percent}`);
};
