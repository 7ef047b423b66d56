/** The bench run: the ceiling, the service on a fresh data dir, the scenarios, the report (see scripts/bench.ts). */
import os from 'node:os';
import path from 'node:path';
import { ANALYTICS_SCENARIO_ID, benchAnalytics } from './analytics.ts';
import { WEBHOOKS_SCENARIO_ID, benchWebhooks } from './webhooks.ts';
import {
  CEILING_ONCE,
  CONNECTIONS,
  DURATION_S,
  HOST,
  KEEP_DATA,
  ONLY,
  PROFILE,
  RATE_LIMITS,
  RECHECK_S,
  ROOT,
  ROUNDS,
  ANALYTICS_APPLICATIONS,
  ANALYTICS_CUSTOMERS,
  SERVICE_ROOT,
  WARMUP_S,
} from './cli.ts';
import { waitForQuiet } from './cpu.ts';
import { measure, median, type Measured } from './load.ts';
import {
  SERVICE_NODE_FLAGS,
  freePort,
  freshTempDir,
  startChild,
  startServiceProcess,
  stopChild,
  tempDirs,
  waitForHealth,
  type Child,
} from './processes.ts';
import { cpuProf, prepareProfDir, reportProfiles, type Windows } from './profiling.ts';
import { printNotes, printTable, writeResults, type HotCheck } from './report.ts';
import {
  API_KEY,
  CEILING_SCENARIO,
  DURABLE_CEILING_SCENARIO,
  SCENARIOS,
  TUNED_CEILING_SCENARIO,
  SPREAD_POOL,
  VALIDATE_POOL,
  serviceEnv,
  type Scenario,
} from './scenarios.ts';
import { api, createVouchers } from './vouchers.ts';

export const log = (msg: string): void => {
  process.stdout.write(`${msg}\n`);
};

export const quiet = async () => {
  const { waitedMs, quiet: ok } = await waitForQuiet();
  if (!ok) log('  (the machine is busy with other processes: measuring anyway)');
  else if (waitedMs > 1_000) log(`  (waited ${(waitedMs / 1000).toFixed(1)} s for other processes to go quiet)`);
};

/**
 * A ceiling app (scripts/bench/ceiling.ts): `bare`, the issue's ceiling (express's app.listen),
 * `tuned`, the same route on the service's HTTP server, or `durable`, the bare route answering
 * once each body is synced to a file in a fresh temporary directory (on the disk the service's
 * `DATA_DIR` is on). Each stays up (idle, it costs nothing) to be measured again before each
 * round of a scenario.
 */
export const startCeiling = async (kind: 'bare' | 'tuned' | 'durable') => {
  const port = await freePort();
  const scenario =
    kind === 'bare' ? CEILING_SCENARIO : kind === 'tuned' ? TUNED_CEILING_SCENARIO : DURABLE_CEILING_SCENARIO;
  const syncDir = kind === 'durable' ? freshTempDir('voucher-bench-sync-') : undefined;
  const proc = startChild(
    scenario.id,
    ROOT,
    'scripts/bench/ceiling.ts',
    {
      PORT: String(port),
      HOST,
      ...(kind === 'tuned' ? { CEILING_SERVER: 'createHttpServer' } : {}),
      ...(syncDir !== undefined ? { CEILING_SYNC_FILE: path.join(syncDir, 'log') } : {}),
    },
    kind === 'bare' ? cpuProf('ceiling') : [],
  );
  const url = `http://${HOST}:${port}`;
  await waitForHealth(proc, url);
  /**
   * `again`: a re-measurement of the (already warm) ceiling: no warm-up, `seconds` (RECHECK_S) long.
   * `against`: another ceiling run to take its ratios against (the tuned ceiling's first run).
   */
  const measureCeiling = async (again = false, seconds = RECHECK_S, against: Measured | null = null) => {
    await quiet();
    const run = await measure(
      scenario,
      url,
      proc.child.pid,
      against,
      again ? 0 : WARMUP_S,
      again ? seconds : DURATION_S,
    );
    const { measured } = run;
    if (measured.non2xx + measured.errors + measured.timeouts > 0) {
      throw new Error(
        `the ${scenario.title} app answered ${measured.non2xx} non-2xx, ${measured.errors} errors, ${measured.timeouts} timeouts`,
      );
    }
    if (against === null) measured.cpuRatio = 1;
    return run;
  };
  return { proc, url, measureCeiling };
};

/**
 * The service, on a fresh data dir under `dataUnder`, with `extraFlags` after the bench's node
 * flags; `startedAt` is `performance.now()` at its spawn.
 */
export const startService = async (
  root = SERVICE_ROOT,
  extraEnv: Record<string, string> = {},
  name = 'service',
  extraFlags: string[] = [],
  dataUnder = os.tmpdir(),
) => {
  const dataDir = freshTempDir('voucher-bench-', { under: dataUnder, keep: KEEP_DATA });
  if (KEEP_DATA) log(`DATA_DIR ${dataDir} (kept)`);
  const port = await freePort();
  // performance.now() at the spawn: the origin of V8's GC trace, to within the service's start-up
  // (gcTrace.ts `isolateStartedAt` places it exactly once the trace's anchor has been read)
  const startedAt = performance.now();
  const proc = startServiceProcess(name, root, serviceEnv(port, dataDir, extraEnv), [
    ...SERVICE_NODE_FLAGS,
    ...(name === 'service' ? cpuProf(name) : []),
    ...extraFlags,
  ]);
  const baseUrl = `http://${HOST}:${port}`;
  await waitForHealth(proc, baseUrl);
  return { proc, baseUrl, startedAt };
};

/** The scenarios --only picks, and the vouchers they need (created through the API, not timed). */
const prepareScenarios = async (baseUrl: string) => {
  const scenarios = SCENARIOS.filter((s) => !ONLY || ONLY.includes(s.id));
  if (scenarios.length === 0 && !ONLY?.includes(ANALYTICS_SCENARIO_ID) && !ONLY?.includes(WEBHOOKS_SCENARIO_ID))
    throw new Error(
      `--only matches no scenario (ids: ${[...SCENARIOS.map((s) => s.id), ANALYTICS_SCENARIO_ID, WEBHOOKS_SCENARIO_ID].join(', ')})`,
    );
  const pools = new Set(scenarios.map((s) => s.pool));
  const count =
    (pools.has('validate') ? VALIDATE_POOL : 0) + (pools.has('spread') ? SPREAD_POOL : 0) + (pools.has('hot') ? 1 : 0);
  log(`creating ${count} vouchers through the API (not timed) ...`);
  const setupStarted = Date.now();
  const { hotId } = await createVouchers(baseUrl, pools);
  log(`  done in ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);
  return { scenarios, hotId };
};

type MeasureCeiling = Awaited<ReturnType<typeof startCeiling>>['measureCeiling'];
interface Runs {
  rows: Measured[];
  ceilings: Measured[];
  tunedCeilings: Measured[];
  windows: Windows;
  warmups: Record<string, { ok2xx: number; failures: number }>;
  /** autocannon runs per scenario (warm-up included): each may leave `connections` requests uncounted. */
  runsPerScenario: Record<string, number>;
}

/**
 * One row from a scenario's rounds: counts add up; req/s, ceiling and CPU per request are the
 * rounds' medians; the ratio is the median of the rounds' ratios (each against the ceiling run
 * right before it); p99 is the worst round's.
 */
const combineRounds = (rounds: Measured[], target: number | null): Measured => {
  const sum = (f: (m: Measured) => number) => rounds.reduce((n, m) => n + f(m), 0);
  const known = (f: (m: Measured) => number | null) => rounds.map(f).filter((x): x is number => x !== null);
  const ratio = median(known((m) => m.ratio));
  const failures = sum((m) => m.non2xx + m.errors + m.timeouts);
  const cpu = known((m) => m.cpuRatio);
  return {
    ...rounds[0]!,
    reqPerSec: median(rounds.map((m) => m.reqPerSec)),
    p50: median(rounds.map((m) => m.p50)),
    p99: Math.max(...rounds.map((m) => m.p99)),
    total: sum((m) => m.total),
    ok2xx: sum((m) => m.ok2xx),
    non2xx: sum((m) => m.non2xx),
    errors: sum((m) => m.errors),
    timeouts: sum((m) => m.timeouts),
    ceilingReqPerSec: median(known((m) => m.ceilingReqPerSec)),
    ratio,
    verdict: target === null ? 'INFO' : ratio >= target && failures === 0 ? 'PASS' : 'MISS',
    serverCpu: median(known((m) => m.serverCpu)),
    loadGenCpu: Math.max(...rounds.map((m) => m.loadGenCpu)),
    otherCpu: Math.max(...known((m) => m.otherCpu), 0),
    serverCpuMsPerReq: median(known((m) => m.serverCpuMsPerReq)),
    cpuRatio: cpu.length > 0 ? median(cpu) : null,
    rounds: rounds.map((m) => m.ratio!),
    tunedReqPerSec: median(known((m) => m.tunedReqPerSec ?? null)),
    tunedRatio: median(known((m) => m.tunedRatio ?? null)),
    tunedRounds: known((m) => m.tunedRatio ?? null),
  };
};

/**
 * Each scenario, after a probe request: a warm-up, then ROUNDS rounds of (ceiling, tuned ceiling,
 * scenario) runs of DURATION_S / ROUNDS seconds each (with --ceiling=once: one run against the
 * first run of each ceiling).
 */
const runScenarios = async (
  scenarios: Scenario[],
  service: { proc: Child; baseUrl: string },
  measureCeiling: MeasureCeiling,
  measureTuned: MeasureCeiling,
  runs: Runs,
) => {
  const ceiling = runs.ceilings[0]!;
  const roundS = CEILING_ONCE ? DURATION_S : Math.max(1, Math.round(DURATION_S / ROUNDS));
  for (const scenario of scenarios) {
    // One request first: a scenario that cannot succeed is a broken bench, not a slow service.
    const probe = await api(service.baseUrl, 'POST', scenario.path, JSON.parse(scenario.body(1_000_000_000)));
    if (probe.status >= 300)
      throw new Error(`${scenario.id}: probe request got ${probe.status} ${JSON.stringify(probe.body)}`);
    log(
      `measuring ${scenario.title}${CEILING_ONCE ? '' : ` (${ROUNDS} rounds of ${roundS} s, each after ${roundS} s of each ceiling)`} ...`,
    );
    const rounds: Measured[] = [];
    let from: number | undefined;
    let warm = { ok2xx: 0, failures: 0 };
    for (let r = 0; r < (CEILING_ONCE ? 1 : ROUNDS); r += 1) {
      let adjacent = ceiling;
      let tuned = runs.tunedCeilings[0]!;
      if (!CEILING_ONCE) {
        adjacent = (await measureCeiling(true, roundS)).measured;
        runs.ceilings.push(adjacent);
        tuned = (await measureTuned(true, roundS)).measured;
        runs.tunedCeilings.push(tuned);
      } else await quiet();
      const { measured, window, warmup2xx, warmupNon2xx } = await measure(
        scenario,
        service.baseUrl,
        service.proc.child.pid,
        adjacent,
        r === 0 ? WARMUP_S : 0,
        roundS,
      );
      measured.tunedReqPerSec = tuned.reqPerSec;
      measured.tunedRatio = measured.reqPerSec / tuned.reqPerSec;
      if (r === 0) warm = { ok2xx: warmup2xx, failures: warmupNon2xx };
      from ??= window.fromUs;
      runs.windows[scenario.id] = {
        fromUs: from,
        toUs: window.toUs,
        requests: rounds.reduce((n, m) => n + m.total, measured.total),
      };
      rounds.push(measured);
    }
    runs.rows.push(rounds.length === 1 ? rounds[0]! : combineRounds(rounds, scenario.target?.ratio ?? null));
    runs.warmups[scenario.id] = warm;
    runs.runsPerScenario[scenario.id] = rounds.length + 1;
  }
};

/** The analytics read on its own seeded DATA_DIR (scripts/bench/analytics.ts). */
const runAnalytics = async (ceiling: Measured, measureCeiling: MeasureCeiling): Promise<Measured> =>
  benchAnalytics({
    rateLimits: RATE_LIMITS,
    serviceRoot: SERVICE_ROOT,
    apiKey: API_KEY,
    connections: CONNECTIONS,
    durationS: DURATION_S,
    warmupS: WARMUP_S,
    keepData: KEEP_DATA,
    tempDirs,
    applications: ANALYTICS_APPLICATIONS,
    customers: ANALYTICS_CUSTOMERS,
    log,
    freePort,
    startService: (name, root, env) => startServiceProcess(name, root, env),
    waitForHealth,
    stopChild,
    ceilingReqPerSec: async () => (CEILING_ONCE ? ceiling : (await measureCeiling()).measured).reqPerSec,
  });

/**
 * Sanity: every 2xx apply on the hot voucher is counted on it (probe + warm-up + measured).
 * autocannon stops with up to `connections` requests in flight per run (warm-up and measured):
 * the server completes them but they are not counted, so the count may exceed by that much.
 */
const checkHotVoucher = async (
  baseUrl: string,
  hotId: string | undefined,
  runs: Runs,
): Promise<HotCheck | undefined> => {
  const hotRow = runs.rows.find((r) => r.id === 'apply-hot');
  if (!hotRow || !hotId) return undefined;
  const hot = await api(baseUrl, 'GET', `/v1/vouchers/${hotId}`);
  const counted = 1 + runs.warmups['apply-hot']!.ok2xx + hotRow.ok2xx;
  const usage = Number(hot.body?.usage_count);
  const uncounted = (runs.runsPerScenario['apply-hot'] ?? 2) * CONNECTIONS;
  return {
    counted_2xx: counted,
    max_uncounted: uncounted,
    usage_count: usage,
    ok: usage >= counted && usage <= counted + uncounted,
  };
};

export const main = async (): Promise<void> => {
  if (SERVICE_ROOT !== ROOT) log(`service from ${SERVICE_ROOT}`);
  log(
    `bench: ${os.cpus().length} CPUs, node ${process.version}, ${CONNECTIONS} connections, pipelining 1, ${WARMUP_S} s warm-up + ${DURATION_S} s per scenario` +
      `${CEILING_ONCE ? '' : ` in ${ROUNDS} round(s), each after as long a run of each ceiling`},` +
      ` rate limiter ${RATE_LIMITS === 'off' ? 'off' : 'on with lifted limits'}`,
  );
  prepareProfDir();

  const { proc: ceilingProc, measureCeiling } = await startCeiling('bare');
  log('measuring the ceiling (bare express, JSON in/out) ...');
  const ceilingRun = await measureCeiling();
  const ceiling = ceilingRun.measured;
  const { proc: tunedProc, measureCeiling: measureTuned } = await startCeiling('tuned');
  log("measuring the tuned ceiling (the same route on the service's HTTP server) ...");
  // Its row compares it with the ceiling (an INFO row); it is the base of the "ratio to tuned" column.
  const tuned = (await measureTuned(false, RECHECK_S, ceiling)).measured;
  Object.assign(tuned, { tunedReqPerSec: tuned.reqPerSec, tunedRatio: 1 } satisfies Partial<Measured>);
  const runs: Runs = {
    rows: [ceiling, tuned],
    ceilings: [ceiling],
    tunedCeilings: [tuned],
    windows: { ceiling: { ...ceilingRun.window, requests: ceiling.total } },
    warmups: {},
    runsPerScenario: {},
  };

  const service = await startService();
  const { scenarios, hotId } = await prepareScenarios(service.baseUrl);
  await runScenarios(scenarios, service, measureCeiling, measureTuned, runs);
  if (!ONLY || ONLY.includes(ANALYTICS_SCENARIO_ID)) runs.rows.push(await runAnalytics(ceiling, measureCeiling));
  const hotCheck = await checkHotVoucher(service.baseUrl, hotId, runs);

  await stopChild(service.proc);
  // its own service and receiver; results in .bench/webhooks.json
  if (!ONLY || ONLY.includes(WEBHOOKS_SCENARIO_ID)) await benchWebhooks(log);
  await Promise.all([stopChild(ceilingProc), stopChild(tunedProc)]);
  printTable(runs.rows);
  printNotes(runs.rows, runs.ceilings, runs.tunedCeilings, hotCheck, log);
  const profiles = PROFILE ? reportProfiles(runs.windows, log) : undefined;
  const out = writeResults({
    ceiling,
    rows: runs.rows,
    ceilings: runs.ceilings,
    tunedCeilings: runs.tunedCeilings,
    warmups: runs.warmups,
    hotCheck,
    profiles,
  });
  log(`results written to ${out}`);
};
