/**
 * `--timeline` (open loop): what the service's threads did during apply's worst stretches. While
 * service A's apply target runs, every thread's CPU time and the main thread's time waiting for a
 * CPU are read from `/proc/<pid>/task/<tid>/schedstat` every SAMPLE_MS; afterwards the round is
 * cut into STRETCH_MS stretches by each request's scheduled time, and the worst ones (by the
 * highest latency of a request scheduled in them) are printed with what each thread did then.
 * Linux only; elsewhere the sampler records nothing.
 */
import fs from 'node:fs';
import { threadName } from './cpu.ts';
import type { GcEvent } from './gcTrace.ts';

/** How often the threads are read, and how long a stretch is. */
export const SAMPLE_MS = 10;
export const STRETCH_MS = 100;
/** A thread busier than this share of a core in a stretch is named in it. */
const BUSY_SHARE = 0.08;

/** One reading: when (performance.now()), and per thread name its run and wait time in ns. */
export interface ThreadSample {
  at: number;
  run: Map<string, number>;
  /** The main thread's time ready but waiting for a CPU, ns. */
  mainWait: number;
}

/** A stretch of a round: its start (ms from the round's start), its worst latency, and the threads. */
export interface Stretch {
  fromMs: number;
  worstMs: number;
  requests: number;
  /** Shares of a core of the main thread running and waiting for a CPU. */
  mainRun: number;
  mainWait: number;
  /** The other threads busier than BUSY_SHARE, share of a core, by name. */
  busy: Record<string, number>;
  /** With `--gc-trace`: the main thread's collections that ended in the stretch, and their pauses. */
  gc?: StretchCollections;
}

export interface StretchCollections {
  scavenges: number;
  scavengeMs: number;
  full: number;
  fullMs: number;
}

const readSchedstat = (file: string): [number, number] | null => {
  try {
    const [run, wait] = fs.readFileSync(file, 'utf8').split(' ').map(Number);
    return [run!, wait!];
  } catch {
    return null; // the thread ended meanwhile
  }
};

/**
 * Starts reading `pid`'s threads every SAMPLE_MS (named by cpu.ts `threadName`, those of one name
 * summed); `stop()` ends it and returns the readings.
 */
export const startThreadSampler = (pid: number | undefined): (() => ThreadSample[]) => {
  const samples: ThreadSample[] = [];
  if (pid === undefined || !fs.existsSync(`/proc/${pid}/task`)) return () => samples;
  const names = new Map<string, string>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      names.set(tid, threadName(pid, tid));
    } catch {
      // ended meanwhile
    }
  }
  const read = () => {
    const run = new Map<string, number>();
    let mainWait = 0;
    for (const [tid, name] of names) {
      const stat = readSchedstat(`/proc/${pid}/task/${tid}/schedstat`);
      if (!stat) continue;
      run.set(name, (run.get(name) ?? 0) + stat[0]);
      if (name === 'main') mainWait = stat[1];
    }
    samples.push({ at: performance.now(), run, mainWait });
  };
  read();
  const timer = setInterval(read, SAMPLE_MS);
  return () => {
    clearInterval(timer);
    read();
    return samples;
  };
};

/**
 * The round's stretches, worst first, at most `count`: `latencies[i]` is request i's latency, the
 * request scheduled `i / rate` s after `startedAt` (performance.now() of the round's start).
 */
export const worstStretches = (
  latencies: ArrayLike<number>,
  rate: number,
  startedAt: number,
  samples: ThreadSample[],
  count: number,
): Stretch[] => {
  const perStretch = (rate * STRETCH_MS) / 1000;
  const stretches: Stretch[] = [];
  for (let k = 0; k * perStretch < latencies.length; k += 1) {
    const first = Math.floor(k * perStretch);
    const last = Math.min(latencies.length, Math.floor((k + 1) * perStretch));
    let worstMs = 0;
    for (let i = first; i < last; i += 1) worstMs = Math.max(worstMs, latencies[i]!);
    const from = startedAt + k * STRETCH_MS;
    const inside = samples.filter((s) => s.at >= from && s.at <= from + STRETCH_MS);
    const a = inside[0];
    const z = inside.at(-1);
    const span = a && z ? z.at - a.at : 0;
    const share = (ns: number) => (span > 0 ? ns / 1e6 / span : 0);
    const busy: Record<string, number> = {};
    if (a && z)
      for (const [name, ns] of z.run) {
        const s = share(ns - (a.run.get(name) ?? 0));
        if (name !== 'main' && s >= BUSY_SHARE) busy[name] = s;
      }
    stretches.push({
      fromMs: k * STRETCH_MS,
      worstMs,
      requests: last - first,
      mainRun: a && z ? share((z.run.get('main') ?? 0) - (a.run.get('main') ?? 0)) : 0,
      mainWait: a && z ? share(z.mainWait - a.mainWait) : 0,
      busy,
    });
  }
  return stretches.sort((x, y) => y.worstMs - x.worstMs).slice(0, count);
};

/**
 * Adds to each stretch the main thread's collections (`--gc-trace`, gcTrace.ts) that ended in it.
 * `roundAtMs` is the round's start on the trace's clock (ms since the service's isolate started).
 */
export const withCollections = (stretches: Stretch[], events: readonly GcEvent[], roundAtMs: number): Stretch[] =>
  stretches.map((stretch) => {
    const from = roundAtMs + stretch.fromMs;
    const gc: StretchCollections = { scavenges: 0, scavengeMs: 0, full: 0, fullMs: 0 };
    for (const e of events) {
      if (e.atMs < from || e.atMs >= from + STRETCH_MS) continue;
      if (e.kind === 's') {
        gc.scavenges += 1;
        gc.scavengeMs += e.pauseMs;
      } else if (e.kind === 'mc') {
        gc.full += 1;
        gc.fullMs += e.pauseMs;
      }
    }
    return { ...stretch, gc };
  });

const collectionsText = ({ scavenges, scavengeMs, full, fullMs }: StretchCollections): string =>
  `; main thread's GC: ${scavenges} scavenge${scavenges === 1 ? '' : 's'}` +
  `${scavenges > 0 ? ` (${scavengeMs.toFixed(1)} ms)` : ''}` +
  `${full > 0 ? `, ${full} full (${fullMs.toFixed(1)} ms)` : ''}`;

/**
 * `round 3, 1.2 s: worst 231 ms; main runs 75 %, waits 26 %; snapshot-writer 27 %, other 36 %`,
 * with `--gc-trace` followed by `; main thread's GC: 2 scavenges (6.1 ms), 1 full (8.8 ms)`.
 */
export const stretchLine = (round: number, s: Stretch): string => {
  const pct = (x: number) => `${Math.round(x * 100)} %`;
  const busy = Object.entries(s.busy)
    .sort((x, y) => y[1] - x[1])
    .map(([name, x]) => `${name} ${pct(x)}`)
    .join(', ');
  return (
    `round ${round + 1}, ${(s.fromMs / 1000).toFixed(1)} s: worst ${s.worstMs.toFixed(0)} ms;` +
    ` main runs ${pct(s.mainRun)}, waits ${pct(s.mainWait)}${busy ? `; ${busy}` : ''}` +
    (s.gc ? collectionsText(s.gc) : '')
  );
};
