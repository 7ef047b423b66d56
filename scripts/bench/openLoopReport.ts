/** The open-loop bench's report: its table, its verdicts and .bench/last.json. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  B_DATA_UNDER,
  B_ENV,
  B_ROOT,
  DURATION_S,
  MAX_CONNECTIONS,
  OPEN_LOOP_CONNECTIONS,
  OPEN_LOOP_DURATION_S,
  OPEN_LOOP_LEAD_IN_S,
  RATE_LIMITS,
  RATES,
  ROOT,
  ROUNDS,
  SERVICE_ROOT,
  WARMUP_S,
} from './cli.ts';
import type { GcSummary } from './gcTrace.ts';
import { median, type Measured } from './load.ts';
import type { OpenLoopResult, Percentiles } from './openLoop.ts';
import type { ProfileSummary } from './profile.ts';

export interface OpenLoopTarget {
  /** `-b`: on the second service of an A/B run (--b-root, --b-env). */
  /** `durable`: the bare route answering once each body is synced (group commit). */
  id: 'bare' | 'durable' | 'validate' | 'apply' | 'validate-b' | 'apply-b';
  title: string;
}

export interface OpenLoopRow {
  /** The offered rate as a fraction of apply's maximum, and in req/s. */
  fraction: number;
  rate: number;
  target: OpenLoopTarget;
  result: OpenLoopResult;
  /** --open-loop-lead-in: the lead-ins' requests, pooled over the rounds (not in `result`); else null. */
  leadIn: OpenLoopResult | null;
  /** CPU over wall time (1.0 = one core): the target's process (median of rounds), the generator and everything else (worst round). */
  serverCpu: number;
  loadGenCpu: number;
  otherCpu: number;
  /**
   * The server's main thread (the event loop that parses, decides and answers), median of rounds:
   * its share of a core, and its CPU per answered request in µs. The queue a request waits in
   * is the main thread's, so these say more about a tail than the whole process's CPU does.
   */
  mainCpu: number | null;
  mainCpuUsPerRequest: number | null;
  /** Each of the server's threads' CPU per answered request in µs, over the rounds (threadCpuPerRequest). */
  threadUsPerRequest: Record<string, number> | null;
  /** Of each thread's CPU per answered request, the µs in the kernel (system calls and the work they do). */
  threadKernelUsPerRequest: Record<string, number> | null;
}

/** A thread that took less than this per request is left out of the per-thread line. */
const THREAD_LINE_MIN_US = 5;

/**
 * `main 363 (kernel 40), sqlite-writer 150 (kernel 70), …`: the threads by CPU per request,
 * largest first, each with its part in the kernel when known.
 */
export const threadLine = (perRequest: Record<string, number>, kernel?: Record<string, number> | null): string =>
  Object.entries(perRequest)
    .filter(([, us]) => us >= THREAD_LINE_MIN_US)
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => {
      const inKernel = kernel?.[name];
      return `${name} ${us.toFixed(0)}` + (inKernel === undefined ? '' : ` (kernel ${inKernel.toFixed(0)})`);
    })
    .join(', ');

export interface OpenLoopVerdict {
  fraction: number;
  target: Exclude<OpenLoopTarget['id'], 'bare'>;
  percentile: keyof Percentiles;
  /** What the percentile is divided by: the bare route's (the issue's targets), unless said. */
  base?: 'bare' | 'durable';
  /** The target's percentile over the base's at the same rate must be at most this (null: information only). */
  max: number | null;
  ratio: number;
  verdict: 'PASS' | 'MISS' | 'INFO' | 'INVALID';
}

const ms = (x: number) => (Number.isNaN(x) ? '?' : x < 10 ? x.toFixed(2) : x.toFixed(1));
const pct = (x: number) => `${Math.round(x * 100)}%`;
const PCT_NAME: Record<keyof Percentiles, string> = { p50: 'p50', p90: 'p90', p99: 'p99', p999: 'p99.9', max: 'max' };

export const printOpenLoop = ({
  applyMax,
  closed,
  rows,
  verdicts,
  log,
}: {
  applyMax: number;
  closed: Partial<Record<OpenLoopTarget['id'], Measured>>;
  rows: OpenLoopRow[];
  verdicts: OpenLoopVerdict[];
  log: (msg: string) => void;
}): void => {
  log('');
  log(
    `closed loop (maximum throughput): ${Object.entries(closed)
      .map(
        ([id, m]) =>
          `${id} ${Math.round(m.reqPerSec)} req/s${m.ratio === null ? '' : ` (${m.ratio.toFixed(2)}× bare)`}${
            m.passes ? ` [passes ${m.passes.map((r) => Math.round(r)).join(', ')}]` : ''
          }`,
      )
      .join(', ')}; the rates below are fractions of apply's ${Math.round(applyMax)} req/s`,
  );
  const header = [
    'rate',
    'target',
    'answered/s',
    'p50',
    'p90',
    'p99',
    'p99.9',
    'max ms',
    'failed',
    'conns peak/new',
    'send lag p99/max',
    'CPU srv/gen/other',
    'main: CPU, µs/req',
  ];
  const lines = rows.map((r) => {
    const { result: x } = r;
    return [
      `${r.rate} (${r.fraction}×)`,
      r.target.title,
      (x.answered / (x.elapsedMs / 1000)).toFixed(0),
      ms(x.latency.p50),
      ms(x.latency.p90),
      ms(x.latency.p99),
      ms(x.latency.p999),
      ms(x.latency.max),
      String(x.non2xx + x.errors + x.timeouts),
      `${x.peakInFlight}${x.capHit ? ' CAP' : ''} / ${x.opened ?? '–'}`,
      `${ms(x.sendLag.p99)} / ${ms(x.sendLag.max)}`,
      `${pct(r.serverCpu)} / ${pct(r.loadGenCpu)} / ${pct(r.otherCpu)}`,
      r.mainCpu === null || r.mainCpuUsPerRequest === null
        ? '–'
        : `${pct(r.mainCpu)}, ${r.mainCpuUsPerRequest.toFixed(0)}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) =>
    cells.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  log(`\n${row(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${lines.map(row).join('\n')}`);
  log("latency in ms from each request's scheduled time (coordinated omission corrected), pooled over the rounds");
  for (const line of leadInLines(rows)) log(line);
  log('');
  log("the service's CPU per answered request by thread, µs, with the part in the kernel (over the rounds):");
  for (const r of rows)
    if (r.threadUsPerRequest && !['bare', 'durable'].includes(r.target.id))
      log(`  ${r.target.title} at ${r.rate} req/s: ${threadLine(r.threadUsPerRequest, r.threadKernelUsPerRequest)}`);
  for (const line of machineLoadLines(rows, os.cpus().length)) log(line);
  log('');
  for (const v of verdicts) {
    const rate = rows.find((r) => r.fraction === v.fraction)!.rate;
    const base = v.base === 'durable' ? 'durable route' : 'bare route';
    log(
      `${v.target} ${PCT_NAME[v.percentile]} / ${base}'s at ${rate} req/s (${v.fraction}×): ${v.ratio.toFixed(2)}×` +
        (v.max === null ? '  (information)' : `  target ≤ ${v.max}× at 0.5×: ${v.verdict}`),
    );
  }
  for (const ab of bOverA(rows)) log(bOverALine(ab));
  const capped = rows.filter((r) => r.result.capHit);
  if (capped.length > 0)
    log(
      `INVALID: the generator reached its ${MAX_CONNECTIONS} connections (${capped.map((r) => `${r.target.id} at ${r.rate}`).join(', ')}):` +
        ' due requests waited for a connection, so the latencies there are lower bounds (--max-connections raises the cap)',
    );
  for (const r of rows) {
    const answered = r.result.answered / (r.result.elapsedMs / 1000);
    if (answered < 0.9 * r.rate)
      log(
        `overloaded: ${r.target.id} answered ${Math.round(answered)} req/s of the ${r.rate} offered: its queue grew for` +
          ' the whole run, so its latencies depend on the run length (on a shared machine: other processes took its CPU)',
      );
  }
  const lagging = rows.filter((r) => r.result.sendLag.p99 > 5);
  if (lagging.length > 0)
    log(
      `note: the generator sent requests late (send lag p99 up to ${ms(Math.max(...lagging.map((r) => r.result.sendLag.p99)))} ms):` +
        ' its own event loop waited for a core, and that lag is in every latency of the run',
    );
  const failed = rows.filter((r) => r.result.non2xx + r.result.errors + r.result.timeouts > 0);
  if (failed.length > 0)
    log(`WARNING: failed requests in ${failed.map((r) => `${r.target.id} at ${r.rate}`).join(', ')}`);
  const maxOther = Math.max(...rows.map((r) => r.otherCpu));
  if (maxOther > 0.2)
    log(
      `note: other processes used up to ${Math.round(maxOther * 100)}% of a core during a round: tail latencies are noisy; repeat the run`,
    );
  for (const note of diskBoundNotes(verdicts, rows)) log(note);
  const misses = verdicts.filter((v) => v.verdict === 'MISS');
  log(misses.length === 0 ? 'no open-loop target missed' : `${misses.length} open-loop target(s) missed`);
};

/**
 * With --open-loop-lead-in, one line per rate: each target's p99 and p99.9 over its rounds'
 * lead-ins, which the table leaves out (the first seconds of each round, after a quiet spell).
 */
export const leadInLines = (rows: readonly OpenLoopRow[]): string[] =>
  [...new Set(rows.map((r) => r.fraction))].flatMap((fraction) => {
    const at = rows.filter((r) => r.fraction === fraction && r.leadIn !== null);
    if (at.length === 0) return [];
    const each = at.map((r) => `${r.target.id} ${ms(r.leadIn!.latency.p99)} / ${ms(r.leadIn!.latency.p999)}`);
    return [
      `the lead-ins at ${at[0]!.rate} req/s (${fraction}×), not in the table, p99 / p99.9 ms: ${each.join(', ')}`,
    ];
  });

/**
 * One line per rate: how busy the machine's CPUs were while each target ran (the target's process,
 * the generator and every other process, as the table's CPU column has them), in % of all of them.
 * Apply's maximum is measured closed-loop, where a commit carries many applies; at a fraction of it
 * each apply costs more, so half of apply's maximum keeps the machine busier than half, while the
 * bare route at the same rate leaves it mostly idle. The targets are ratios between the two.
 */
export const machineLoadLines = (rows: readonly OpenLoopRow[], cpus: number): string[] =>
  [...new Set(rows.map((r) => r.fraction))].map((fraction) => {
    const at = rows.filter((r) => r.fraction === fraction);
    const busy = at.map(
      (r) => `${r.target.id} ${Math.round((100 * (r.serverCpu + r.loadGenCpu + r.otherCpu)) / cpus)} %`,
    );
    return `the machine's ${cpus} CPUs busy during each target's rounds at ${at[0]!.rate} req/s (${fraction}×), with the generator and other processes: ${busy.join(', ')}`;
  });

/** The durable route's ratio over the bare route's at `at`'s percentile and fraction (information only). */
const durableOverBare = (
  verdicts: readonly OpenLoopVerdict[],
  at: Pick<OpenLoopVerdict, 'percentile' | 'fraction'>,
): OpenLoopVerdict | undefined =>
  verdicts.find(
    (d) =>
      d.target === 'durable' &&
      (d.base ?? 'bare') === 'bare' &&
      d.percentile === at.percentile &&
      d.fraction === at.fraction,
  );

/**
 * A note for each of apply's judged targets (at half load) that the durable route alone missed in
 * the run: no apply answered once its commit is synced waits less than that route (the bare route
 * plus a synced write, group-committed), so the run cannot tell whether the service meets that
 * target. What the service added is then apply's percentile over the durable route's.
 */
export const diskBoundNotes = (verdicts: readonly OpenLoopVerdict[], rows: readonly OpenLoopRow[]): string[] =>
  verdicts.flatMap((v) => {
    if (v.max === null || v.verdict === 'INFO' || (v.target !== 'apply' && v.target !== 'apply-b')) return [];
    const durable = durableOverBare(verdicts, v);
    if (!durable || durable.ratio <= v.max) return [];
    const overDurable = verdicts.find(
      (d) =>
        d.target === v.target && d.base === 'durable' && d.percentile === v.percentile && d.fraction === v.fraction,
    );
    const rate = rows.find((r) => r.fraction === v.fraction)?.rate;
    const name = PCT_NAME[v.percentile];
    return [
      `note: at ${rate} req/s the durable route alone had a ${name} of ${durable.ratio.toFixed(2)}× the bare route's, above` +
        ` ${v.target}'s target of ${v.max}×: no apply answered once its commit is synced could meet it in this run` +
        (overDurable ? ` (${v.target}'s ${name} was ${overDurable.ratio.toFixed(2)}× the durable route's)` : ''),
    ];
  });

/** The targets and percentiles an A/B run compares, B's over A's. */
const AB_TARGETS = ['validate', 'apply'] as const;
const AB_PERCENTILES = ['p50', 'p99', 'p999'] as const;

/** An A/B run at one rate: B's figures over A's. */
export interface BOverA {
  fraction: number;
  rate: number;
  /** B's percentile over A's, for each target both services ran. */
  latency: Partial<Record<(typeof AB_TARGETS)[number], Record<(typeof AB_PERCENTILES)[number], number>>>;
  /** apply-b's CPU per answered request over apply's, for each thread that both took at least THREAD_LINE_MIN_US in. */
  applyThreads: Record<string, number>;
  /** The generator reached its connection cap at this rate: the latencies there are lower bounds. */
  invalid: boolean;
}

/** B over A at each rate of an A/B run (nothing without a B). */
export const bOverA = (rows: readonly OpenLoopRow[]): BOverA[] =>
  [...new Set(rows.map((r) => r.fraction))].flatMap((fraction) => {
    const at = rows.filter((r) => r.fraction === fraction);
    const of = (id: OpenLoopTarget['id']) => at.find((r) => r.target.id === id);
    const latency: BOverA['latency'] = {};
    for (const id of AB_TARGETS) {
      const a = of(id)?.result;
      const b = of(`${id}-b`)?.result;
      if (a && b)
        latency[id] = Object.fromEntries(AB_PERCENTILES.map((p) => [p, b.latency[p] / a.latency[p]])) as Record<
          (typeof AB_PERCENTILES)[number],
          number
        >;
    }
    if (Object.keys(latency).length === 0) return [];
    const threadsA = of('apply')?.threadUsPerRequest ?? {};
    const threadsB = of('apply-b')?.threadUsPerRequest ?? {};
    const applyThreads = Object.fromEntries(
      Object.keys(threadsA)
        .filter((name) => threadsA[name]! >= THREAD_LINE_MIN_US && (threadsB[name] ?? 0) >= THREAD_LINE_MIN_US)
        .map((name) => [name, threadsB[name]! / threadsA[name]!]),
    );
    return [{ fraction, rate: at[0]!.rate, latency, applyThreads, invalid: at.some((r) => r.result.capHit) }];
  });

/** `B over A at 838 req/s (0.5×): validate p50 0.97×, p99 0.59×, p99.9 0.43×; apply …`. */
export const bOverALine = (ab: BOverA): string =>
  `B over A at ${ab.rate} req/s (${ab.fraction}×): ` +
  AB_TARGETS.filter((id) => ab.latency[id])
    .map((id) => `${id} ${AB_PERCENTILES.map((p) => `${PCT_NAME[p]} ${ab.latency[id]![p].toFixed(2)}×`).join(', ')}`)
    .join('; ');

const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

/**
 * `--repeat` of an A/B run: at each rate, B's p99 and p99.9 over A's for each target in every run,
 * an INVALID run's in brackets, and their median over the valid runs; then each of apply's threads'
 * CPU per answered request, B's over A's, as the median and range over every run (a capped
 * generator does not change what a request costs). Empty without a B.
 */
export const abRepeatSummary = (runs: ReadonlyArray<readonly BOverA[]>): string[] => {
  const fractions = [...new Set(runs.flatMap((run) => run.map((ab) => ab.fraction)))];
  return fractions.flatMap((fraction) => {
    const each = runs.map((run) => run.find((ab) => ab.fraction === fraction));
    const latencyLines = AB_TARGETS.flatMap((id) =>
      (['p99', 'p999'] as const).flatMap((p) => {
        if (!each.some((ab) => ab?.latency[id])) return [];
        const shown = each.map((ab) => {
          const ratio = ab?.latency[id]?.[p];
          if (ratio === undefined) return '–';
          return ab!.invalid ? `[${ratio.toFixed(2)}×]` : `${ratio.toFixed(2)}×`;
        });
        const kept = each.flatMap((ab) => (ab && !ab.invalid && ab.latency[id] ? [ab.latency[id]![p]] : []));
        return [
          `B over A, ${id} ${PCT_NAME[p]} at ${fraction}× over ${runs.length} runs: ${shown.join(', ')}` +
            (kept.length > 0 ? ` (median of the ${kept.length} valid ${median(kept).toFixed(2)}×)` : ' (no valid run)'),
        ];
      }),
    );
    const names = [...new Set(each.flatMap((ab) => Object.keys(ab?.applyThreads ?? {})))];
    const threads = names
      .map((name) => ({
        name,
        ratios: each.flatMap((ab) => (ab?.applyThreads[name] === undefined ? [] : [ab.applyThreads[name]])),
      }))
      .sort((x, y) => median(x.ratios) - median(y.ratios))
      .map(({ name, ratios }) => `${name} ${median(ratios).toFixed(2)}× (${range(ratios)}, ${ratios.length} runs)`);
    return threads.length === 0
      ? latencyLines
      : [
          ...latencyLines,
          `B over A, apply's CPU per answered request by thread at ${fraction}×, median: ${threads.join(', ')}`,
        ];
  });
};

export const writeOpenLoopResults = (results: {
  applyMax: number;
  closed: Partial<Record<OpenLoopTarget['id'], Measured>>;
  rows: OpenLoopRow[];
  verdicts: OpenLoopVerdict[];
  profiles: Record<string, ProfileSummary> | undefined;
  /** --gc-trace: the main thread's collections per target and rate. */
  gc?: Record<string, GcSummary>;
}): string => {
  const out = path.join(ROOT, '.bench', 'last.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    `${JSON.stringify(
      {
        at: new Date().toISOString(),
        mode: 'open-loop',
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
        service_root: SERVICE_ROOT,
        settings: {
          rates: RATES,
          open_loop_duration_s: OPEN_LOOP_DURATION_S,
          rounds: ROUNDS,
          max_connections: MAX_CONNECTIONS,
          connections: OPEN_LOOP_CONNECTIONS,
          lead_in_s: OPEN_LOOP_LEAD_IN_S,
          closed_loop_warmup_s: WARMUP_S,
          closed_loop_duration_s: DURATION_S,
          rate_limits: RATE_LIMITS,
          b_root: B_ROOT ?? null,
          b_env: B_ENV ?? null,
          b_data_under: B_DATA_UNDER ?? null,
        },
        apply_max_req_per_sec: results.applyMax,
        closed_loop: results.closed,
        open_loop: results.rows.map((r) => ({
          ...r.result,
          lead_in: r.leadIn,
          fraction: r.fraction,
          rate: r.rate,
          target: r.target.id,
          server_cpu: r.serverCpu,
          load_gen_cpu: r.loadGenCpu,
          other_cpu: r.otherCpu,
          main_cpu: r.mainCpu,
          main_cpu_us_per_request: r.mainCpuUsPerRequest,
        })),
        verdicts: results.verdicts,
        profiles: results.profiles,
        gc: results.gc ?? null,
      },
      null,
      2,
    )}\n`,
  );
  return path.relative(ROOT, out);
};

/**
 * `--repeat`: each judged target (a verdict with a limit, at the fraction it is judged at) with its
 * ratio in every run, their median, and in how many runs it was met; then in how many runs every
 * judged target was. A run whose verdict is INVALID counts as not met. After each of apply's
 * targets, the durable route's ratio at the same percentile in every run and in how many it alone
 * was above that target (diskBoundNotes: there no synced apply could have met it), so that a
 * series can tell the disk's bad periods from the service's.
 */
export const repeatSummary = (runs: ReadonlyArray<readonly OpenLoopVerdict[]>): string[] => {
  const judged = (v: OpenLoopVerdict) => v.max !== null && v.verdict !== 'INFO';
  const key = (v: OpenLoopVerdict) => `${v.target} ${v.percentile} ${v.fraction}`;
  const keys = [...new Set(runs.flatMap((run) => run.filter(judged).map(key)))];
  const ratiosText = (each: Array<OpenLoopVerdict | undefined>) =>
    `${each.map((v) => (v === undefined ? '–' : `${v.ratio.toFixed(2)}×`)).join(', ')}` +
    ` (median ${median(each.filter((v) => v !== undefined).map((v) => v.ratio)).toFixed(2)}×)`;
  const lines = keys.flatMap((k) => {
    const each = runs.map((run) => run.find((v) => judged(v) && key(v) === k));
    const first = each.find((v) => v !== undefined)!;
    const met = each.filter((v) => v?.verdict === 'PASS').length;
    const line =
      `${first.target} ${PCT_NAME[first.percentile]} / bare route's at ${first.fraction}× over ${runs.length} runs:` +
      ` ${ratiosText(each)}; target ≤ ${first.max}×: met in ${met} of ${runs.length}`;
    if (first.target !== 'apply') return [line];
    const durable = runs.map((run) => durableOverBare(run, first));
    if (durable.every((d) => d === undefined)) return [line];
    const above = durable.filter((d) => d !== undefined && d.ratio > first.max!).length;
    return [
      line,
      `  the durable route alone, ${PCT_NAME[first.percentile]} / bare route's: ${ratiosText(durable)};` +
        ` above ${first.max}× in ${above} of ${runs.length}`,
    ];
  });
  const allMet = runs.filter((run) => run.some(judged) && run.filter(judged).every((v) => v.verdict === 'PASS')).length;
  return [...lines, `every target met in ${allMet} of ${runs.length} runs`];
};

/**
 * `--repeat`: every run's verdicts (and in an A/B run, B over A at each rate) and the summary
 * printed (repeatSummary, abRepeatSummary), in .bench/open-loop-runs.json (.bench/last.json holds
 * the last run's details).
 */
export const writeRepeatedResults = (
  runs: ReadonlyArray<readonly OpenLoopVerdict[]>,
  summary: readonly string[],
  abRuns: ReadonlyArray<readonly BOverA[]> = [],
): string => {
  const out = path.join(ROOT, '.bench', 'open-loop-runs.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const each = runs.map((verdicts, i) => ({ verdicts, ...(abRuns[i]?.length ? { b_over_a: abRuns[i] } : {}) }));
  fs.writeFileSync(
    out,
    `${JSON.stringify({ at: new Date().toISOString(), mode: 'open-loop', runs: each, summary }, null, 2)}\n`,
  );
  return path.relative(ROOT, out);
};
