/** The bench's report: the table, the notes under it (PASS/MISS, noise), and .bench/last.json. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CEILING_ONCE,
  CONNECTIONS,
  DURATION_S,
  RATE_LIMITS,
  RECHECK_S,
  ROOT,
  ROUNDS,
  SERVICE_ROOT,
  WARMUP_S,
} from './cli.ts';
import type { Measured } from './load.ts';
import type { ProfileSummary } from './profile.ts';

export interface HotCheck {
  counted_2xx: number;
  max_uncounted: number;
  usage_count: number;
  ok: boolean;
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export const printTable = (rows: Measured[]): void => {
  const header = [
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'ceiling req/s',
    'ratio',
    'target',
    'result',
    'tuned req/s',
    'ratio to tuned',
    'CPU srv/gen/other',
    'srv CPU ms/req',
    'CPU ratio',
  ];
  const pctOf = (x: number | null) => (x === null ? '?' : `${Math.round(x * 100)}%`);
  const lines = rows.map((r) => [
    r.title,
    fmt(r.reqPerSec),
    fmt(r.p50, 1),
    fmt(r.p99, 1),
    fmt(r.non2xx + r.errors + r.timeouts),
    r.ceilingReqPerSec === null ? '—' : fmt(r.ceilingReqPerSec),
    r.ratio === null ? '1.00×' : `${r.ratio.toFixed(2)}×`,
    r.target === null ? '—' : `≥ ${r.target.toFixed(1)}×, 0 non-2xx`,
    r.verdict,
    r.tunedReqPerSec == null ? '—' : fmt(r.tunedReqPerSec),
    r.tunedRatio == null ? '—' : `${r.tunedRatio.toFixed(2)}×`,
    `${pctOf(r.serverCpu)} / ${pctOf(r.loadGenCpu)} / ${pctOf(r.otherCpu)}`,
    r.serverCpuMsPerReq === null ? '?' : r.serverCpuMsPerReq.toFixed(3),
    r.cpuRatio === null ? (r.verdict === 'BASE' ? '1.00×' : '?') : `${r.cpuRatio.toFixed(2)}×`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(
    `\n${row(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${lines.map(row).join('\n')}\n`,
  );
};

/** The lines under the table: ceiling spread, targets missed, and what may have skewed the run. */
export const printNotes = (
  rows: Measured[],
  ceilings: Measured[],
  tunedCeilings: Measured[],
  hotCheck: HotCheck | undefined,
  log: (msg: string) => void,
): void => {
  const runsOf = (name: string, runs: Measured[]) => {
    const values = runs.map((c) => c.reqPerSec);
    log(
      `${name} runs: ${values.map((v) => fmt(v)).join(', ')} req/s (spread ${fmt(Math.min(...values))}–${fmt(Math.max(...values))});` +
        ' each ratio uses the run right before it',
    );
  };
  log('');
  if (ceilings.length > 1) runsOf('ceiling', ceilings);
  if (tunedCeilings.length > 1) runsOf('tuned ceiling', tunedCeilings);
  for (const r of rows) {
    if (r.rounds)
      log(
        `${r.id}: ratio per round ${r.rounds.map((x) => `${x.toFixed(2)}×`).join(', ')} (the table gives their median)`,
      );
    if (r.tunedRounds && r.tunedRounds.length > 1)
      log(`${r.id}: ratio to the tuned ceiling per round ${r.tunedRounds.map((x) => `${x.toFixed(2)}×`).join(', ')}`);
  }
  log(
    'targets are ratios to the ceiling (bare express as usually served, app.listen); the tuned ceiling is the same route on the' +
      " service's HTTP server (src/http/server.ts), given for comparison, without targets",
  );
  const misses = rows.filter((r) => r.verdict === 'MISS');
  log(
    misses.length === 0
      ? '\nall targets met'
      : `\n${misses.length} target(s) missed: ${misses.map((m) => m.id).join(', ')}`,
  );
  for (const line of failedAnswerLines(rows)) log(line);
  if (hotCheck && !hotCheck.ok) {
    log(
      `WARNING: hot voucher usage_count ${hotCheck.usage_count}, expected ${hotCheck.counted_2xx} to ${hotCheck.counted_2xx + hotCheck.max_uncounted}`,
    );
  }
  const maxLoadGen = Math.max(...rows.map((r) => r.loadGenCpu));
  if (maxLoadGen > 0.9)
    log(
      `note: the load generator used up to ${Math.round(maxLoadGen * 100)}% of a core: the ceiling may be load-generator bound`,
    );
  const maxOther = Math.max(...rows.map((r) => r.otherCpu ?? 0));
  if (maxOther > 0.2) {
    log(
      `note: other processes used up to ${Math.round(maxOther * 100)}% of a core during a run: the req/s ratios are noisy;` +
        ' the CPU ratio (server CPU per request, ceiling over scenario) is the steadier figure',
    );
  }
};

/**
 * A warning for each scenario some of whose requests were not answered with a 2xx (non-2xx, errors,
 * timeouts), with or without a target: its figures are then partly or wholly those of the error
 * answers, not of what the scenario names.
 */
export const failedAnswerLines = (rows: readonly Measured[]): string[] =>
  rows
    .filter((r) => r.non2xx + r.errors + r.timeouts > 0)
    .map(
      (r) =>
        `WARNING: ${r.id}: ${fmt(r.non2xx)} non-2xx answers, ${fmt(r.errors)} errors and ${fmt(r.timeouts)} timeouts` +
        ` among ${fmt(r.total)} requests: its figures are partly or wholly those of the failures`,
    );

export interface Results {
  ceiling: Measured;
  rows: Measured[];
  ceilings: Measured[];
  tunedCeilings: Measured[];
  warmups: Record<string, { ok2xx: number; failures: number }>;
  hotCheck: HotCheck | undefined;
  profiles: Record<string, ProfileSummary> | undefined;
}

/** Writes .bench/last.json; returns its path relative to the project root. */
export const writeResults = ({
  ceiling,
  rows,
  ceilings,
  tunedCeilings,
  warmups,
  hotCheck,
  profiles,
}: Results): string => {
  const out = path.join(ROOT, '.bench', 'last.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    `${JSON.stringify(
      {
        at: new Date().toISOString(),
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
        service_root: SERVICE_ROOT,
        settings: {
          connections: CONNECTIONS,
          pipelining: 1,
          warmup_s: WARMUP_S,
          duration_s: DURATION_S,
          rounds: CEILING_ONCE ? 1 : ROUNDS,
          ceiling_recheck_s: CEILING_ONCE ? null : RECHECK_S,
          rate_limits: RATE_LIMITS,
        },
        ceiling_req_per_sec: ceiling.reqPerSec,
        results: rows,
        ceiling_runs: ceilings,
        tuned_ceiling_runs: tunedCeilings,
        warmups,
        hot_voucher_check: hotCheck,
        profiles,
      },
      null,
      2,
    )}\n`,
  );
  return path.relative(ROOT, out);
};
