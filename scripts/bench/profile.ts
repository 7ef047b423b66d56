/**
 * Summary of a V8 .cpuprofile (from `node --cpu-prof`) for the bench: self time by module
 * (package, project file, node internals), the top functions by self time, and the project's
 * functions by inclusive time. Idle time is left out of the percentages.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * A part of the profile, in µs of the monotonic clock: V8 profile timestamps and
 * process.hrtime() both read CLOCK_MONOTONIC on Linux, so the bench's own clock delimits it.
 */
export interface ProfileWindow {
  fromUs: number;
  toUs: number;
}

export interface ProfileSummary {
  /** Main-thread time not idle in the window (CPU work and blocking calls such as fsync). */
  busyMs: number;
  /** Requests completed in the window (as counted by the load generator). */
  requests: number;
  busyUsPerReq: number;
  /** Self time by module, µs per request, every module. */
  modules: Record<string, number>;
  selfTop: Array<{ fn: string; usPerReq: number; pct: number }>;
  inclusiveProject: Array<{ fn: string; usPerReq: number; pct: number }>;
  /**
   * Stalls: runs of consecutive busy samples (no idle one between them) of at least
   * STRETCH_MIN_MS, during which the main thread could answer no other request. Their number,
   * their total and longest length, and where their time went (the sampled function ← the
   * innermost project function on its stack).
   */
  stretches: {
    minMs: number;
    count: number;
    totalMs: number;
    longestMs: number[];
    causes: Array<{ fn: string; ms: number; pct: number }>;
    /**
     * The longest runs of consecutive samples on one and the same stack: most likely one call
     * that blocked the thread that long (a commit's fsync or checkpoint, a collection), with the
     * time since the run's start when it began.
     */
    longestCalls: Array<{ fn: string; ms: number }>;
  };
  /** With other threads' profiles (workers): their busy milliseconds in the same window. */
  otherThreadsBusyMs?: number[];
}

/** A busy stretch of the main thread at least this long counts as a stall (see ProfileSummary). */
export const STRETCH_MIN_MS = 5;

const moduleOf = (url: string, root: string): string => {
  if (url === '') return '(native/vm)';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const file = url.replace(/^file:\/\//, '');
  return file.startsWith(root) ? file.slice(root.length + 1) : file;
};

// --- Source positions --------------------------------------------------------------------------
// tsx compiles each .ts file to one line (minified whitespace), so profile positions are columns
// of that line. Its transform cache (<tmpdir>/tsx-<uid>/) holds { code, map } per compiled file:
// the newest entry for a file maps a column back to the .ts line.

const VLQ = new Map([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].map((c, i) => [c, i]));

/** Generated (line, column) → original line (0-based), from a source map's `mappings`. */
const decodeMappings = (mappings: string): Array<Array<[number, number]>> => {
  const lines: Array<Array<[number, number]>> = [];
  let source = 0;
  let origLine = 0;
  let origCol = 0;
  for (const lineText of mappings.split(';')) {
    const segments: Array<[number, number]> = [];
    let genCol = 0;
    for (const segment of lineText.split(',')) {
      if (segment === '') continue;
      const values: number[] = [];
      let value = 0;
      let shift = 0;
      for (const ch of segment) {
        const digit = VLQ.get(ch) ?? 0;
        value += (digit & 31) << shift;
        if (digit & 32) {
          shift += 5;
          continue;
        }
        values.push(value & 1 ? -(value >> 1) : value >> 1);
        value = 0;
        shift = 0;
      }
      genCol += values[0] ?? 0;
      if (values.length >= 4) {
        source += values[1]!;
        origLine += values[2]!;
        origCol += values[3]!;
        segments.push([genCol, origLine]);
      }
    }
    lines.push(segments);
  }
  void source;
  void origCol;
  return lines;
};

type LineMapper = (line: number, column: number) => number | undefined;

/** How much of a tsx cache entry's end is read to find the file it compiled. */
const TAIL_BYTES = 2_000;

/** The last `bytes` bytes of `file`, as text. */
const readTail = (file: string, bytes: number): string => {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    fs.readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
};

/**
 * For each project file in the profile, the cached compilation that matches it best: the one in
 * which most functions of the profile sit at their recorded position, named ones counting most
 * (a file may have been compiled several times: as ESM or CJS, before and after edits). `dir` is
 * tsx's cache; a profile without TypeScript frames reads nothing of it.
 */
export const sourceMappers = (
  nodes: ProfileNode[],
  dir = path.join(os.tmpdir(), `tsx-${os.userInfo().uid}`),
): Map<string, LineMapper> => {
  const frames = new Map<string, Array<{ name: string; line: number; column: number }>>();
  for (const { callFrame: f } of nodes) {
    if (!f.url.startsWith('file://') || !f.url.endsWith('.ts')) continue;
    const file = f.url.slice('file://'.length);
    if (!frames.has(file)) frames.set(file, []);
    frames.get(file)!.push({ name: f.functionName, line: f.lineNumber, column: f.columnNumber });
  }
  if (frames.size === 0) return new Map();
  const best = new Map<string, { score: number; mtime: number; code: string; mappings: string }>();
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return new Map();
  }
  for (const name of entries) {
    try {
      const file = path.join(dir, name);
      // The cache holds every file tsx ever compiled here: read an entry whole only if its source
      // map, at its end, names a file of the profile.
      const source = /"sources":\["([^"]+)"\]/.exec(readTail(file, TAIL_BYTES))?.[1];
      if (source === undefined || !frames.has(source)) continue;
      const text = fs.readFileSync(file, 'utf8');
      const entry = JSON.parse(text) as { code: string; map: { mappings: string } };
      const lines = entry.code.split('\n');
      // A named function found at its column counts most; any frame inside the code counts a little.
      const score = frames.get(source)!.reduce((sum, f) => {
        const line = lines[f.line] ?? '';
        if (f.column >= line.length) return sum;
        return (
          sum +
          1 +
          (f.name && line.slice(Math.max(0, f.column - f.name.length - 12), f.column + 1).includes(f.name) ? 10 : 0)
        );
      }, 0);
      const mtime = fs.statSync(file).mtimeMs;
      const seen = best.get(source);
      if (!seen || score > seen.score || (score === seen.score && mtime > seen.mtime)) {
        best.set(source, { score, mtime, code: entry.code, mappings: entry.map.mappings });
      }
    } catch {
      /* unreadable entry: skip */
    }
  }
  const mappers = new Map<string, LineMapper>();
  for (const [source, { mappings }] of best) {
    let decoded: Array<Array<[number, number]>> | undefined;
    mappers.set(source, (line, column) => {
      decoded ??= decodeMappings(mappings);
      let found: number | undefined;
      for (const [col, orig] of decoded[line] ?? []) {
        if (col > column) break;
        found = orig;
      }
      return found;
    });
  }
  return mappers;
};

export const loadProfile = (file: string): CpuProfile => JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;

/** Summarises the samples taken in `window` (all of them without one). */
/** Summarises the samples taken in `window` (all of them without one), per completed request. */
export const summariseProfile = (
  profile: CpuProfile,
  root: string,
  window: ProfileWindow | undefined,
  requests: number,
): ProfileSummary => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  const stretches: Array<Array<[number, number]>> = [];
  let stretch: Array<[number, number]> = [];
  const idleIds = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const sameStack: Array<{ id: number; us: number }> = [];
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    self.set(id, (self.get(id) ?? 0) + delta);
    const last = sameStack.at(-1);
    if (last?.id === id) last.us += delta;
    else if (!idleIds.has(id)) sameStack.push({ id, us: delta });
    else sameStack.push({ id: -1, us: 0 });
    if (idleIds.has(id)) {
      if (stretch.length > 0) stretches.push(stretch);
      stretch = [];
    } else stretch.push([id, delta]);
  });
  if (stretch.length > 0) stretches.push(stretch);

  const mappers = sourceMappers(profile.nodes);
  const labels = new Map<number, string>();
  const label = (n: ProfileNode): string => {
    let text = labels.get(n.id);
    if (text === undefined) {
      const { functionName, url, lineNumber, columnNumber } = n.callFrame;
      const mapper = url.endsWith('.ts') ? mappers.get(url.replace(/^file:\/\//, '')) : undefined;
      const line = mapper ? mapper(lineNumber, columnNumber) : lineNumber;
      text = `${functionName || '(anonymous)'} ${moduleOf(url, root)}:${line === undefined ? '?' : line + 1}`;
      labels.set(n.id, text);
    }
    return text;
  };
  let busy = 0;
  const modules = new Map<string, number>();
  const fns = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') continue;
    busy += us;
    const special = node.callFrame.functionName.startsWith('(') && node.callFrame.url === '';
    const module = special ? node.callFrame.functionName : moduleOf(node.callFrame.url, root);
    modules.set(module, (modules.get(module) ?? 0) + us);
    fns.set(label(node), (fns.get(label(node)) ?? 0) + us);
    // Inclusive time of project functions: each distinct project frame on the stack once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      const url = n.callFrame.url;
      if (!url.includes(root) || url.includes('node_modules')) continue;
      const l = label(n);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + us);
    }
  }
  // Stalls: where the time of the long busy stretches went.
  const projectFrame = (id: number): string | undefined => {
    for (let cur: number | undefined = parent.get(id); cur !== undefined; cur = parent.get(cur)) {
      const url = byId.get(cur)!.callFrame.url;
      if (url.includes(root) && !url.includes('node_modules')) return label(byId.get(cur)!);
    }
    return undefined;
  };
  const cause = (id: number) => {
    const leaf = label(byId.get(id)!);
    const frame = projectFrame(id);
    return frame && frame !== leaf ? `${leaf} ← ${frame}` : leaf;
  };
  const long = stretches
    .map((samples) => ({ samples, us: samples.reduce((n, [, d]) => n + d, 0) }))
    .filter((x) => x.us >= STRETCH_MIN_MS * 1000);
  const causes = new Map<string, number>();
  for (const { samples } of long)
    for (const [id, d] of samples) {
      const key = cause(id);
      causes.set(key, (causes.get(key) ?? 0) + d);
    }
  const longUs = long.reduce((n, x) => n + x.us, 0);
  const perReq = (us: number) => Math.round((us / Math.max(1, requests)) * 10) / 10;
  const pct = (us: number) => Math.round((us / Math.max(1, busy)) * 1000) / 10;
  const top = (m: Map<string, number>, count: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([fn, us]) => ({ fn, usPerReq: perReq(us), pct: pct(us) }));
  return {
    busyMs: Math.round(busy / 1000),
    requests,
    busyUsPerReq: perReq(busy),
    modules: Object.fromEntries([...modules.entries()].sort((a, b) => b[1] - a[1]).map(([m, us]) => [m, perReq(us)])),
    selfTop: top(fns, 25),
    inclusiveProject: top(inclusive, 25),
    stretches: {
      minMs: STRETCH_MIN_MS,
      count: long.length,
      totalMs: Math.round(longUs / 100) / 10,
      longestMs: long
        .map((x) => Math.round(x.us / 100) / 10)
        .sort((a, b) => b - a)
        .slice(0, 10),
      causes: [...causes.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 15)
        .map(([fn, us]) => ({
          fn,
          ms: Math.round(us / 100) / 10,
          pct: Math.round((us / Math.max(1, longUs)) * 1000) / 10,
        })),
      longestCalls: sameStack
        .filter((r) => r.id !== -1)
        .sort((a, b) => b.us - a.us)
        .slice(0, 10)
        .map((r) => ({ fn: cause(r.id), ms: Math.round(r.us / 100) / 10 })),
    },
  };
};

/** Non-idle milliseconds of a profile in a window (e.g. a worker thread's). */
export const busyMsIn = (profile: CpuProfile, window: ProfileWindow): number => {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  let at = profile.startTime;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= window.fromUs && at <= window.toUs && !idle.has(id)) busy += delta;
  });
  return Math.round(busy);
};

const us = (n: number) => `${n.toFixed(1).padStart(7)} µs`;

/**
 * Text lines for a summary; with a baseline (the ceiling), modules are compared per request.
 * `thread` names whose profile it is in the first line ("main thread" unless told).
 */
export const formatSummary = (summary: ProfileSummary, baseline?: ProfileSummary, thread = 'main thread'): string[] => {
  const lines = [
    `  busy ${summary.busyMs} ms for ${summary.requests} requests: ${summary.busyUsPerReq} µs of ${thread} per request` +
      (baseline ? ` (ceiling ${baseline.busyUsPerReq} µs)` : ''),
  ];
  const names = [...new Set([...Object.keys(summary.modules), ...Object.keys(baseline?.modules ?? {})])];
  const rows = names
    .map((m) => ({ m, here: summary.modules[m] ?? 0, base: baseline?.modules[m] ?? 0 }))
    .sort((a, b) => b.here - b.base - (a.here - a.base))
    .slice(0, 14);
  lines.push(
    baseline
      ? '  self time by module, per request (here / ceiling / difference), largest differences first:'
      : '  self time by module, per request:',
  );
  for (const r of rows) {
    lines.push(
      baseline
        ? `  ${us(r.here)} ${us(r.base)} ${(r.here - r.base >= 0 ? '+' : '') + (r.here - r.base).toFixed(1).padStart(6)} µs  ${r.m}`
        : `  ${us(r.here)}  ${r.m}`,
    );
  }
  lines.push('  top functions, self time per request:');
  for (const f of summary.selfTop.slice(0, 20))
    lines.push(`  ${us(f.usPerReq)} ${f.pct.toFixed(1).padStart(5)}%  ${f.fn}`);
  if (summary.inclusiveProject.length > 0) {
    lines.push('  project functions, inclusive time per request (includes what they call, e.g. next()):');
    for (const f of summary.inclusiveProject.slice(0, 20))
      lines.push(`  ${us(f.usPerReq)} ${f.pct.toFixed(1).padStart(5)}%  ${f.fn}`);
  }
  const st = summary.stretches;
  lines.push(
    `  stalls: ${st.count} busy stretches of ${st.minMs} ms or more, ${st.totalMs} ms in all` +
      (st.count > 0 ? `; longest ${st.longestMs.join(', ')} ms; their time went to:` : ''),
  );
  for (const c of st.causes)
    lines.push(`  ${c.ms.toFixed(1).padStart(8)} ms ${c.pct.toFixed(1).padStart(5)}%  ${c.fn}`);
  lines.push('  longest runs of samples on one stack (likely one blocking call):');
  for (const c of st.longestCalls) lines.push(`  ${c.ms.toFixed(1).padStart(8)} ms  ${c.fn}`);
  if (summary.otherThreadsBusyMs)
    lines.push(
      `  other threads (workers) busy meanwhile: ${summary.otherThreadsBusyMs.map((x) => `${x} ms`).join(', ')} (competing for the cores)`,
    );
  return lines;
};
