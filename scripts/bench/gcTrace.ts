/**
 * `--gc-trace`: the service's main-thread garbage collections in each open-loop round, from V8's
 * own trace (`--trace-gc-nvp --trace-gc-verbose` on the service's command line, read from its
 * stdout as it runs). Per target and rate: scavenges, what they promoted to the old generation per
 * request, what was allocated in the old generation directly (its growth from one scavenge to the
 * next beyond what the scavenge promoted: internalized strings, the tables of Maps and Sets grown
 * there), and the full collections with their pauses. The old generation's inflow per request is
 * what sets how often a full collection comes (docs/benchmark.md, "The old generation's inflow").
 */
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/**
 * The node flags that write the trace this module reads: V8's, and the anchor of its clock
 * (gcAnchor.cjs, preloaded).
 */
export const GC_TRACE_FLAGS = [
  '--trace-gc-nvp',
  '--trace-gc-verbose',
  '--require',
  path.join(path.dirname(fileURLToPath(import.meta.url)), 'gcAnchor.cjs'),
];

/** One collection of one isolate, as `--trace-gc-nvp` and `--trace-gc-verbose` print it. */
export interface GcEvent {
  /** `s` a scavenge, `mc` a full (mark-compact) collection, others as V8 names them. */
  kind: string;
  /** Milliseconds since the isolate started. */
  atMs: number;
  pauseMs: number;
  /** Bytes the scavenge moved to the old generation (0 for other kinds). */
  promoted: number;
  /** The old space's bytes in use after the collection (from the verbose lines that follow it). */
  oldUsed?: number;
}

const NVP = /^\[\d+:(0x[0-9a-f]+)\]\s+([\d.]+) ms: pause=([\d.]+) .*?\bgc=(\w+)\b/;
const PROMOTED = /\bpromoted=(\d+)\b/;
const OLD_SPACE = /^\[\d+:(0x[0-9a-f]+)\]\s+Old space,\s+used:\s+(\d+) KB/;
const ANCHOR = /^GC_ANCHOR (\d+)$/;

/**
 * Reads the trace line by line, keeping each isolate's collections (the service runs several:
 * its main thread's and each worker thread's). Lines of the service's own output pass by.
 */
export class GcTraceReader {
  private readonly isolates = new Map<string, GcEvent[]>();
  /** The collection printed last, of any isolate. */
  private last: GcEvent | undefined;
  /** The anchor's scavenge on the trace's clock and its time on the monotonic clock (gcAnchor.cjs). */
  private anchor: { atMs: number; ns: bigint } | undefined;

  /** Reads `stream` (the service's stdout) line by line as it comes; resolves when it ends. */
  follow(stream: Readable): Promise<void> {
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    lines.on('line', (line) => this.line(line));
    return new Promise((resolve) => lines.once('close', resolve));
  }

  private line(line: string): void {
    const nvp = NVP.exec(line);
    if (nvp) {
      const [, isolate, at, pause, kind] = nvp;
      const events = this.isolates.get(isolate!) ?? this.isolates.set(isolate!, []).get(isolate!)!;
      this.last = {
        kind: kind!,
        atMs: Number(at),
        pauseMs: Number(pause),
        promoted: kind === 's' ? Number(PROMOTED.exec(line)?.[1] ?? 0) : 0,
      };
      events.push(this.last);
      return;
    }
    const anchor = ANCHOR.exec(line);
    if (anchor) {
      if (this.last && !this.anchor) this.anchor = { atMs: this.last.atMs, ns: BigInt(anchor[1]!) };
      return;
    }
    const old = OLD_SPACE.exec(line);
    if (old) {
      const last = this.isolates.get(old[1]!)?.at(-1);
      if (last && last.oldUsed === undefined) last.oldUsed = Number(old[2]) * 1024;
    }
  }

  /**
   * When, on this process's `performance.now()` clock, the trace's clock read 0 (the service's
   * main isolate started), from the anchor (gcAnchor.cjs); undefined until it has been read.
   */
  isolateStartedAt(now = performance.now(), nowNs = process.hrtime.bigint()): number | undefined {
    if (!this.anchor) return undefined;
    return now - Number(nowNs - this.anchor.ns) / 1e6 - this.anchor.atMs;
  }

  /**
   * The main thread's collections: the isolate whose old space grew largest (the worker threads'
   * heaps are capped far lower); without old-space sizes, the first to report (the main thread's
   * isolate starts first).
   */
  main(): GcEvent[] {
    let best: GcEvent[] = [];
    let largest = -1;
    for (const events of this.isolates.values()) {
      const peak = Math.max(0, ...events.map((e) => e.oldUsed ?? 0));
      if (peak > largest) [best, largest] = [events, peak];
    }
    return best;
  }
}

/** The collections of one target at one rate, over the windows of its rounds. */
export interface GcSummary {
  /** Requests answered in the windows. */
  requests: number;
  seconds: number;
  scavenges: number;
  scavengePauseMeanMs: number | null;
  /** Bytes promoted by the scavenges, per request. */
  promotedPerRequest: number;
  /**
   * The old space's growth from one scavenge to the next beyond what the scavenge promoted, per
   * request: what the main thread allocated in the old generation directly. Measured between
   * consecutive scavenges and scaled to all the scavenges of the windows; null when no two
   * consecutive scavenges have old-space sizes (a trace without --trace-gc-verbose).
   */
  directOldPerRequest: number | null;
  fullCollections: number;
  fullPausesMs: number[];
}

/** A round: its window in the isolate's milliseconds and the requests answered in it. */
export interface GcWindow {
  fromMs: number;
  toMs: number;
  requests: number;
}

/** Sums the main thread's collections that ended inside the windows. */
export const summarizeGc = (events: readonly GcEvent[], windows: readonly GcWindow[]): GcSummary => {
  const inside = (at: number) => windows.some((w) => at >= w.fromMs && at <= w.toMs);
  const requests = windows.reduce((n, w) => n + w.requests, 0);
  const seconds = windows.reduce((n, w) => n + (w.toMs - w.fromMs) / 1000, 0);
  let scavenges = 0;
  let scavengePause = 0;
  let promoted = 0;
  let direct = 0;
  let sized = 0;
  const fullPausesMs: number[] = [];
  for (let i = 0; i < events.length; i += 1) {
    const e = events[i]!;
    if (!inside(e.atMs)) continue;
    if (e.kind !== 's') {
      if (e.kind === 'mc') fullPausesMs.push(e.pauseMs);
      continue;
    }
    scavenges += 1;
    scavengePause += e.pauseMs;
    promoted += e.promoted;
    // the growth since the scavenge before it (after a full collection the old space is still
    // being swept, and its size in use falls as sweeping frees what the collection found dead)
    const before = events[i - 1];
    if (before?.kind === 's' && before.oldUsed !== undefined && e.oldUsed !== undefined) {
      direct += e.oldUsed - before.oldUsed - e.promoted;
      sized += 1;
    }
  }
  const per = (bytes: number) => (requests > 0 ? bytes / requests : 0);
  return {
    requests,
    seconds,
    scavenges,
    scavengePauseMeanMs: scavenges > 0 ? scavengePause / scavenges : null,
    promotedPerRequest: per(promoted),
    directOldPerRequest: sized > 0 ? per((direct * scavenges) / sized) : null,
    fullCollections: fullPausesMs.length,
    fullPausesMs,
  };
};
