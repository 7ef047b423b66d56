/** The fuzzer's report as text: counts, slow sockets, memory, control latency, then each finding with how to replay it. */
import type { Finding } from './judge.ts';
import { percentile, type FuzzReport, type Stats } from './run.ts';

const mb = (bytes: number | undefined) => (bytes === undefined ? '?' : `${(bytes / 2 ** 20).toFixed(0)} MB`);

const statuses = (stats: Stats) =>
  Object.entries(stats.byStatus)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status}×${n}`)
    .join(' ');

/** The command that sends request `index` of the run again (against a fresh service). */
export const replayCommand = (report: Pick<FuzzReport, 'seed' | 'without'>, index: number): string =>
  `npm run fuzz -- --seed=${report.seed} --replay=${index}${report.without.length > 0 ? ` --without=${report.without.join(',')}` : ''}`;

/** Findings that look alike (same kind, target, status, code, first tag): one example, a count. */
const grouped = (findings: Finding[]): Array<{ example: Finding; count: number; indices: number[] }> => {
  const groups = new Map<string, { example: Finding; count: number; indices: number[] }>();
  for (const finding of findings) {
    const key = [
      finding.kind,
      finding.request?.target,
      finding.status,
      finding.code,
      finding.request?.tags.join(',') ?? finding.message,
    ].join('|');
    const group = groups.get(key) ?? { example: finding, count: 0, indices: [] };
    group.count += 1;
    if (finding.request) group.indices.push(finding.request.index);
    groups.set(key, group);
  }
  return [...groups.values()];
};

export const formatFinding = (
  report: Pick<FuzzReport, 'seed' | 'without'>,
  finding: Finding,
  count = 1,
  indices: number[] = [],
): string => {
  const lines = [`[${finding.kind}] ${finding.message}${count > 1 ? ` — ${count} like it` : ''}`];
  const r = finding.request;
  if (r) {
    lines.push(`  request #${r.index} (seed ${report.seed}): ${r.method} ${r.path}`);
    lines.push(`  target ${r.target}; tags ${r.tags.join(', ') || 'valid'}`);
    if (Object.keys(r.headers).length > 0) lines.push(`  headers ${JSON.stringify(r.headers)}`);
    if (r.bodyBytes > 0) lines.push(`  body (${r.bodyBytes} bytes) ${JSON.stringify(r.body)}`);
    lines.push(`  replay: ${replayCommand(report, r.index)}`);
    if (indices.length > 1)
      lines.push(`  also requests ${indices.slice(1, 11).join(', ')}${indices.length > 11 ? ', …' : ''}`);
  }
  if (finding.answer) lines.push(`  answer: ${finding.answer.replace(/\s+/g, ' ')}`);
  for (const line of finding.log ?? []) lines.push(`  log: ${line}`);
  return lines.join('\n');
};

export const formatReport = (report: FuzzReport): string => {
  const out: string[] = [];
  const seconds = (report.durationMs / 1000).toFixed(1);
  out.push(`seed ${report.seed}${report.without.length > 0 ? `, without ${report.without.join(', ')}` : ''}`);
  out.push(
    `${report.sent} requests in ${seconds} s, ${report.answered} answered: ${Object.entries(report.byStatus)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([s, n]) => `${s}×${n}`)
      .join(' ')}`,
  );
  out.push('by target:');
  for (const [target, stats] of Object.entries(report.byTarget).sort(([a], [b]) => a.localeCompare(b)))
    out.push(`  ${target.padEnd(24)} ${String(stats.count).padStart(6)}  ${statuses(stats)}`);
  out.push('by tag (a request can carry several):');
  for (const [tag, stats] of Object.entries(report.byTag).sort(([a], [b]) => a.localeCompare(b)))
    out.push(`  ${tag.padEnd(32)} ${String(stats.count).padStart(6)}  ${statuses(stats)}`);
  if (report.sockets.length > 0) {
    out.push('slow sockets:');
    const byKind = new Map<string, string[]>();
    for (const probe of report.sockets) {
      const list = byKind.get(probe.kind) ?? [];
      list.push(
        probe.closedAfterMs === undefined
          ? 'open'
          : `${(probe.closedAfterMs / 1000).toFixed(1)} s${probe.firstLine ? ` (${probe.firstLine})` : ''}`,
      );
      byKind.set(probe.kind, list);
    }
    for (const [kind, list] of byKind) out.push(`  ${kind.padEnd(24)} closed by the server after: ${list.join(', ')}`);
  }
  const { before, peak, after } = report.memory;
  out.push(`service RSS: ${mb(before)} before, ${mb(peak)} at most during, ${mb(after)} after`);
  const { baselineMs, samples, failures } = report.control;
  if (samples.length > 0) {
    const p50 = percentile(samples, 50);
    const p95 = percentile(samples, 95);
    const max = Math.max(...samples);
    out.push(
      `control GET /v1/vouchers: ${baselineMs.toFixed(1)} ms before the run; during it (${samples.length} samples${failures > 0 ? `, ${failures} failed` : ''}) median ${p50.toFixed(1)} ms (${(p50 / baselineMs).toFixed(1)}×), p95 ${p95.toFixed(1)} ms (${(p95 / baselineMs).toFixed(1)}×), max ${max.toFixed(1)} ms (${(max / baselineMs).toFixed(1)}×)`,
    );
  }
  if (report.findings.length === 0) out.push('no findings');
  else {
    const groups = grouped(report.findings);
    out.push(`${report.findings.length} findings (${groups.length} kinds):`);
    for (const group of groups) out.push(formatFinding(report, group.example, group.count, group.indices));
  }
  return out.join('\n');
};
