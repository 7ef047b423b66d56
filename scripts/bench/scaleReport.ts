/**
 * The scale bench's figures (scripts/bench/scale.ts), shaped without I/O: segment rows, the
 * first-to-last drift (as measured, and against the reference rounds), the disk per application,
 * the replay's speed read from `npm run replay`'s output, and the verdicts against the targets.
 * Pure, so that the unit tests can check them.
 */

/** The targets the scale bench reports against. */
export const SCALE_TARGETS = {
  /** The service's RSS after every segment, MB (it must not grow with history). */
  rssMb: 300,
  /** Throughput and p99 of the last segment against the first, as a fraction (0.1 = within 10 %). */
  drift: 0.1,
  /** The first apply on the hot voucher after a restart, ms. */
  firstApplyMs: 50,
  /** A full replay, events per second. */
  replayEventsPerSec: 50_000,
} as const;

/** One segment's load run as autocannon reports it, and the service's RSS right after it. */
export interface SegmentRun {
  /** Requests sent (2xx and not). */
  requests: number;
  ok2xx: number;
  failures: number;
  /** Wall seconds of the segment. */
  seconds: number;
  p99Ms: number;
  rssBytes: number | null;
  /** The same load right after, on a service with no history (a reference round); absent: none run. */
  reference?: ReferenceRun;
}

/** A reference round: the phase's applies on a fresh service, right after a segment. */
export interface ReferenceRun {
  reqPerSec: number;
  p99Ms: number;
}

export interface SegmentRow {
  /** Applications made so far in this phase, this segment included. */
  upTo: number;
  reqPerSec: number;
  p99Ms: number;
  rssMb: number | null;
  failures: number;
  /** The reference round after the segment: null when none ran. */
  reference: ReferenceRun | null;
}

export interface PhaseReport {
  id: 'spread' | 'hot';
  title: string;
  segments: SegmentRow[];
  /** Last segment's req/s over the first's, minus 1 (−0.12: 12 % slower at the end). */
  throughputDrift: number | null;
  /** Last segment's p99 over the first's, minus 1 (+0.3: 30 % worse at the end). */
  p99Drift: number | null;
  /**
   * The same drifts with each segment taken relative to its reference round (its req/s over the
   * reference's, its p99 over the reference's): the machine's own slowing and speeding up, which
   * the reference round right after a segment shares, cancel out; what history costs stays. Null
   * unless the first and last segments both have a reference round.
   */
  throughputDriftVsReference: number | null;
  p99DriftVsReference: number | null;
  peakRssMb: number | null;
  failures: number;
}

const mb = (bytes: number | null): number | null => (bytes === null ? null : bytes / (1024 * 1024));

/** Sizes of the segments that split `total` into `parts` (the last takes the remainder). */
export const segmentSizes = (total: number, parts = 10): number[] => {
  if (!Number.isSafeInteger(total) || total <= 0)
    throw new Error(`applications must be a positive integer, got ${total}`);
  const count = Math.min(parts, total);
  const size = Math.floor(total / count);
  return Array.from({ length: count }, (_, i) => (i === count - 1 ? total - size * (count - 1) : size));
};

/** The 99th percentile of latencies (nearest rank: the smallest value with 99 % at or under it); 0 for none. */
export const p99Of = (latencies: readonly number[]): number => {
  if (latencies.length === 0) return 0;
  const sorted = Float64Array.from(latencies).sort();
  return sorted[Math.ceil(sorted.length * 0.99) - 1]!;
};

/**
 * The drift from the first segment to the last of a figure taken relative to each segment's
 * reference round: (last ÷ its reference) ÷ (first ÷ its reference) − 1.
 */
const relativeDrift = (
  first: SegmentRow | undefined,
  last: SegmentRow | undefined,
  figure: (s: SegmentRow) => number,
  reference: (r: ReferenceRun) => number,
): number | null => {
  if (!first?.reference || !last?.reference || first === last) return null;
  const [a, b, ra, rb] = [figure(first), figure(last), reference(first.reference), reference(last.reference)];
  return a > 0 && ra > 0 && rb > 0 ? b / rb / (a / ra) - 1 : null;
};

/** The rows of a phase, cumulative in applications, and its drift from the first segment to the last. */
export const phaseReport = (id: PhaseReport['id'], title: string, runs: SegmentRun[]): PhaseReport => {
  let upTo = 0;
  const segments = runs.map((run): SegmentRow => {
    upTo += run.ok2xx;
    return {
      upTo,
      reqPerSec: run.seconds > 0 ? run.requests / run.seconds : 0,
      p99Ms: run.p99Ms,
      rssMb: mb(run.rssBytes),
      failures: run.failures,
      reference: run.reference ?? null,
    };
  });
  const first = segments[0];
  const last = segments.at(-1);
  const drift = (a: number, b: number) => (a > 0 ? b / a - 1 : null);
  const rss = segments.map((s) => s.rssMb).filter((x): x is number => x !== null);
  return {
    id,
    title,
    segments,
    throughputDrift: first && last && segments.length > 1 ? drift(first.reqPerSec, last.reqPerSec) : null,
    p99Drift: first && last && segments.length > 1 ? drift(first.p99Ms, last.p99Ms) : null,
    throughputDriftVsReference: relativeDrift(
      first,
      last,
      (s) => s.reqPerSec,
      (r) => r.reqPerSec,
    ),
    p99DriftVsReference: relativeDrift(
      first,
      last,
      (s) => s.p99Ms,
      (r) => r.p99Ms,
    ),
    peakRssMb: rss.length > 0 ? Math.max(...rss) : null,
    failures: segments.reduce((n, s) => n + s.failures, 0),
  };
};

export interface DiskRow {
  file: string;
  bytes: number;
  bytesPerApplication: number;
}

/** Each file's size and its bytes per application, largest first, and the total. */
export const diskReport = (
  files: Array<{ file: string; bytes: number }>,
  applications: number,
): { files: DiskRow[]; totalBytes: number; bytesPerApplication: number } => {
  const per = (bytes: number) => (applications > 0 ? bytes / applications : 0);
  const rows = files
    .filter((f) => f.bytes > 0)
    .map((f) => ({ file: f.file, bytes: f.bytes, bytesPerApplication: per(f.bytes) }))
    .sort((a, b) => b.bytes - a.bytes || a.file.localeCompare(b.file));
  const totalBytes = rows.reduce((n, r) => n + r.bytes, 0);
  return { files: rows, totalBytes, bytesPerApplication: per(totalBytes) };
};

/**
 * The events and milliseconds of each environment `npm run replay` rebuilt, read from its
 * non-interactive output (`<env>: replayed <n> events (up to position <p>) in <ms> ms`).
 */
export const parseReplayOutput = (output: string): { events: number; ms: number; eventsPerSec: number | null } => {
  let events = 0;
  let ms = 0;
  for (const match of output.matchAll(/^\S+: replayed (\d+) events \(up to position \d+\) in (\d+) ms$/gm)) {
    events += Number(match[1]);
    ms += Number(match[2]);
  }
  return { events, ms, eventsPerSec: ms > 0 ? (events / ms) * 1000 : null };
};

export type Verdict = 'PASS' | 'MISS' | 'n/a';

export interface ScaleVerdicts {
  rss: Verdict;
  throughputDrift: Verdict;
  p99Drift: Verdict;
  /** The same targets on the drifts against the reference rounds (`n/a` without them). */
  throughputDriftVsReference: Verdict;
  p99DriftVsReference: Verdict;
  firstApply: Verdict;
  replay: Verdict;
}

/**
 * Verdicts against SCALE_TARGETS: RSS after every segment of every phase, the drift of the last
 * segment from the first (throughput down, p99 up) as measured and against the reference rounds,
 * the first apply after a restart, the replay; a figure not measured is `n/a`.
 */
export const verdicts = (input: {
  phases: PhaseReport[];
  firstApplyMs: number | null;
  replayEventsPerSec: number | null;
}): ScaleVerdicts => {
  // 1e-9: a drift of exactly 10 % (11 ms after 10) is within the target despite floating point.
  const pass = (ok: boolean | null): Verdict => (ok === null ? 'n/a' : ok ? 'PASS' : 'MISS');
  const peaks = input.phases.map((p) => p.peakRssMb).filter((x): x is number => x !== null);
  const figures = (figure: (p: PhaseReport) => number | null) =>
    input.phases.map(figure).filter((x): x is number => x !== null);
  const slower = (drifts: number[]) =>
    pass(drifts.length > 0 ? drifts.every((d) => d >= -SCALE_TARGETS.drift - 1e-9) : null);
  const worse = (drifts: number[]) =>
    pass(drifts.length > 0 ? drifts.every((d) => d <= SCALE_TARGETS.drift + 1e-9) : null);
  return {
    rss: pass(peaks.length > 0 ? Math.max(...peaks) <= SCALE_TARGETS.rssMb : null),
    throughputDrift: slower(figures((p) => p.throughputDrift)),
    p99Drift: worse(figures((p) => p.p99Drift)),
    throughputDriftVsReference: slower(figures((p) => p.throughputDriftVsReference)),
    p99DriftVsReference: worse(figures((p) => p.p99DriftVsReference)),
    firstApply: pass(input.firstApplyMs === null ? null : input.firstApplyMs < SCALE_TARGETS.firstApplyMs),
    replay: pass(
      input.replayEventsPerSec === null ? null : input.replayEventsPerSec >= SCALE_TARGETS.replayEventsPerSec,
    ),
  };
};
