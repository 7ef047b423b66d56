/**
 * Summary of a V8 .cpuprofile (from `node --cpu-prof`) for the bench: self time by module
 * (package, project file, node internals), the top functions by self time, and the project's
 * functions by inclusive time. Idle time is left out of the percentages.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

/** A part of the profile, in ms since the profile started (about when the process started). */
export interface ProfileWindow { fromMs: number; toMs: number }

export interface ProfileSummary {
  busyMs: number;
  byModule: Array<{ module: string; pct: number }>;
  selfTop: Array<{ fn: string; pct: number }>;
  inclusiveProject: Array<{ fn: string; pct: number }>;
}

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
  let source = 0; let origLine = 0; let origCol = 0;
  for (const lineText of mappings.split(';')) {
    const segments: Array<[number, number]> = [];
    let genCol = 0;
    for (const segment of lineText.split(',')) {
      if (segment === '') continue;
      const values: number[] = [];
      let value = 0; let shift = 0;
      for (const ch of segment) {
        const digit = VLQ.get(ch) ?? 0;
        value += (digit & 31) << shift;
        if (digit & 32) { shift += 5; continue; }
        values.push(value & 1 ? -(value >> 1) : value >> 1);
        value = 0; shift = 0;
      }
      genCol += values[0] ?? 0;
      if (values.length >= 4) {
        source += values[1]!; origLine += values[2]!; origCol += values[3]!;
        segments.push([genCol, origLine]);
      }
    }
    lines.push(segments);
  }
  void source; void origCol;
  return lines;
};

type LineMapper = (line: number, column: number) => number | undefined;

const sourceMappers = (notAfterMs: number): Map<string, LineMapper> => {
  const dir = path.join(os.tmpdir(), `tsx-${os.userInfo().uid}`);
  const newest = new Map<string, { mtime: number; file: string }>();
  let entries: string[] = [];
  try { entries = fs.readdirSync(dir); } catch { return new Map(); }
  for (const name of entries) {
    const file = path.join(dir, name);
    try {
      const stat = fs.statSync(file);
      if (!stat.isFile() || stat.mtimeMs > notAfterMs) continue;
      // The map sits at the end of the entry: read its tail for "sources".
      const text = fs.readFileSync(file, 'utf8');
      const match = /"sources":\["([^"]+)"\]/.exec(text.slice(-2_000));
      if (!match) continue;
      const source = match[1]!;
      const seen = newest.get(source);
      if (!seen || seen.mtime < stat.mtimeMs) newest.set(source, { mtime: stat.mtimeMs, file });
    } catch { /* unreadable entry: skip */ }
  }
  const mappers = new Map<string, LineMapper>();
  for (const [source, { file }] of newest) {
    let decoded: Array<Array<[number, number]>> | undefined;
    mappers.set(source, (line, column) => {
      decoded ??= decodeMappings((JSON.parse(fs.readFileSync(file, 'utf8')) as { map: { mappings: string } }).map.mappings);
      const segments = decoded[line] ?? [];
      let best: number | undefined;
      for (const [col, orig] of segments) { if (col > column) break; best = orig; }
      return best;
    });
  }
  return mappers;
};

export const loadProfile = (file: string): CpuProfile => JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;

/** Summarises the samples taken in `window` (all of them without one). */
export const summariseProfile = (profile: CpuProfile, root: string, window?: ProfileWindow): { top: ProfileSummary; text: string[] } => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let at = 0; // µs since startTime
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromMs * 1000 || at > window.toMs * 1000)) return;
    self.set(id, (self.get(id) ?? 0) + delta);
  });

  const mappers = sourceMappers(Date.now());
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
  const top = (m: Map<string, number>, count: number) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
  const pct = (us: number) => Math.round((us / busy) * 1000) / 10;
  const summary: ProfileSummary = {
    busyMs: Math.round(busy / 1000),
    byModule: top(modules, 15).map(([module, us]) => ({ module, pct: pct(us) })),
    selfTop: top(fns, 25).map(([fn, us]) => ({ fn, pct: pct(us) })),
    inclusiveProject: top(inclusive, 25).map(([fn, us]) => ({ fn, pct: pct(us) })),
  };
  const text = [
    `  busy ${summary.busyMs} ms (idle excluded)`,
    '  by module (self):',
    ...summary.byModule.map((m) => `    ${m.pct.toFixed(1).padStart(5)}%  ${m.module}`),
    '  top functions (self):',
    ...summary.selfTop.map((f) => `    ${f.pct.toFixed(1).padStart(5)}%  ${f.fn}`),
    '  project functions (inclusive):',
    ...summary.inclusiveProject.map((f) => `    ${f.pct.toFixed(1).padStart(5)}%  ${f.fn}`),
  ];
  return { top: summary, text };
};
