/**
 * `npm run bench -- --open-loop`: latency at a steady arrival rate (docs/benchmark.md, "Open loop").
 *
 * 1. The bare ceiling and the service start as in the closed-loop bench; validate's and spread
 *    apply's vouchers are created.
 * 2. Closed loop, as the default mode measures it: the bare route, validate and spread apply, each
 *    after the usual warm-up. Apply's req/s is its maximum throughput in this run.
 * 3. Open loop: for each fraction of --rates (a quarter and a half by default), the rate
 *    fraction × apply's maximum is offered to the bare route, validate and apply in turn, in
 *    ROUNDS rounds (the targets alternate, so a noisy second hits all three alike); each target's
 *    latencies are pooled over its rounds. Latency counts from each request's scheduled time
 *    (scripts/bench/openLoop.ts). Each round opens a new pool of connections
 *    (--open-loop-connections=kept: each target keeps one pool for all its rounds, opened by an
 *    unmeasured second at the first rate).
 * 4. The targets: at half of apply's maximum, apply's p99 ≤ 2× and p99.9 ≤ 3× the bare route's,
 *    validate's p99 ≤ 1× the bare route's, at the same rate in the same run.
 * 5. The disk's share: the bare route made durable (each body written and synced with group commit,
 *    scripts/bench/ceiling.ts) runs at the same rates beside the others. Its percentiles over the
 *    bare route's are the least any durable apply adds on this disk; apply's over its own are what
 *    the service adds beyond it. Both are printed for information; the targets stay as above.
 */
import os from 'node:os';
import {
  APPLY_MAX,
  B_DATA_UNDER,
  B_ENV,
  B_ROOT,
  DURATION_S,
  GC_TRACE,
  MAX_CONNECTIONS,
  OPEN_LOOP_CONNECTIONS,
  OPEN_LOOP_DURATION_S,
  OPEN_LOOP_LEAD_IN_S,
  PROFILE,
  RATE_LIMITS,
  RATES,
  REPEAT,
  ROUNDS,
  SERVICE_ROOT,
  ROOT,
  TIMELINE,
  WARMUP_S,
} from './cli.ts';
import { STRETCH_MS, startThreadSampler, stretchLine, withCollections, worstStretches } from './timeline.ts';
import { GC_TRACE_FLAGS, GcTraceReader, summarizeGc, type GcSummary, type GcWindow } from './gcTrace.ts';
import { DISK_QUIET_BYTES, DISK_WAIT_LIMIT_MS, startCpuMeter, waitForDisk } from './cpu.ts';
import { mainThreadCpu, measure, median, takeBody, threadCpuPerRequest, type Measured } from './load.ts';
import { httpSender, mergeRuns, runOpenLoop, type HttpSender, type OpenLoopRun } from './openLoop.ts';
import {
  printOpenLoop,
  repeatSummary,
  abRepeatSummary,
  bOverA,
  type BOverA,
  writeOpenLoopResults,
  writeRepeatedResults,
  type OpenLoopRow,
  type OpenLoopTarget,
  type OpenLoopVerdict,
} from './openLoopReport.ts';
import { sleep } from '../lib/processes.ts';
import { removeTempDirs, stopChild } from './processes.ts';
import { prepareProfDir, reportProfiles, type Windows } from './profiling.ts';
import { log, quiet, startCeiling, startService } from './run.ts';
import { CEILING_SCENARIO, DURABLE_CEILING_SCENARIO, HEADERS, SCENARIOS, type Scenario } from './scenarios.ts';
import { api, createVouchers } from './vouchers.ts';

type Target = OpenLoopTarget['id'];
const AB = B_ROOT !== undefined || B_ENV !== undefined || B_DATA_UNDER !== undefined;
/** The warm-up before a target's second closed-loop pass: it was warmed up in the first. */
const SECOND_PASS_WARMUP_S = 3;

/**
 * The closed loop's passes, in order; the first holds every target. With B, validate and apply are
 * measured a second time, B's before A's, and each target keeps the mean of its two passes
 * (`meanOfPasses`): in one pass with A always first, every difference between A's maximum and B's
 * would carry the order as well (the one measured second runs while the disk still writes back the
 * first one's pages, and after the machine's load has moved).
 */
export const closedLoopPasses = (ab: boolean): Target[][] =>
  ab
    ? [
        ['bare', 'durable', 'validate', 'validate-b', 'apply', 'apply-b'],
        ['apply-b', 'apply', 'validate-b', 'validate'],
      ]
    : [['bare', 'durable', 'validate', 'apply']];
/** Every target of this run, in the order of the first round (`roundOrder`). */
const TARGET_ORDER: Target[] = closedLoopPasses(AB)[0]!;

/**
 * One target's closed-loop passes as one measurement: its req/s, latencies, ratio and CPU figures
 * are the passes' means, its counts their sums, and `passes` keeps each pass's req/s.
 */
export const meanOfPasses = (passes: Measured[]): Measured => {
  const [first] = passes;
  if (first === undefined) throw new Error('meanOfPasses: no pass');
  if (passes.length === 1) return first;
  const mean = (of: (m: Measured) => number | null): number | null => {
    const values = passes.map(of);
    return values.some((v) => v === null) ? null : (values as number[]).reduce((sum, v) => sum + v, 0) / values.length;
  };
  const sum = (of: (m: Measured) => number): number => passes.reduce((total, m) => total + of(m), 0);
  const reqPerSec = mean((m) => m.reqPerSec)!;
  return {
    ...first,
    reqPerSec,
    p50: mean((m) => m.p50)!,
    p99: mean((m) => m.p99)!,
    total: sum((m) => m.total),
    ok2xx: sum((m) => m.ok2xx),
    non2xx: sum((m) => m.non2xx),
    errors: sum((m) => m.errors),
    timeouts: sum((m) => m.timeouts),
    ratio: first.ceilingReqPerSec === null ? null : reqPerSec / first.ceilingReqPerSec,
    serverCpu: mean((m) => m.serverCpu),
    loadGenCpu: mean((m) => m.loadGenCpu)!,
    otherCpu: mean((m) => m.otherCpu),
    serverCpuMsPerReq: mean((m) => m.serverCpuMsPerReq),
    cpuRatio: mean((m) => m.cpuRatio),
    threadCpuMsPerReq: passes.every((m) => m.threadCpuMsPerReq !== null)
      ? Object.fromEntries(
          [...new Set(passes.flatMap((m) => Object.keys(m.threadCpuMsPerReq!)))].map((name) => [
            name,
            mean((m) => m.threadCpuMsPerReq![name] ?? 0)!,
          ]),
        )
      : null,
    passes: passes.map((m) => m.reqPerSec),
  };
};
/**
 * The targets of round `r`: with B, every other round runs B's validate and apply before A's. A
 * target that writes leaves work behind it (the OS writing back its pages, a WAL to copy) that
 * slows the one that follows it on the same disk, so B always after A would favour A.
 */
const roundOrder = (r: number): Target[] =>
  AB && r % 2 === 1 ? ['bare', 'durable', 'validate-b', 'validate', 'apply-b', 'apply'] : TARGET_ORDER;

/** The issue's targets, at half of apply's maximum: a target's percentile over the bare route's. */
export const OPEN_LOOP_TARGETS: Array<
  Omit<OpenLoopVerdict, 'ratio' | 'verdict' | 'fraction' | 'max'> & { max: number }
> = [
  { target: 'apply', percentile: 'p99', max: 2 },
  { target: 'apply', percentile: 'p999', max: 3 },
  { target: 'validate', percentile: 'p99', max: 1 },
];
/**
 * For information at every rate: the durable route over the bare one (what syncing alone adds),
 * and apply over the durable route (what the service adds to it).
 */
const DISK_SHARES: Array<Pick<OpenLoopVerdict, 'target' | 'percentile' | 'base'>> = [
  { target: 'durable', percentile: 'p99', base: 'bare' },
  { target: 'durable', percentile: 'p999', base: 'bare' },
  { target: 'apply', percentile: 'p99', base: 'durable' },
  { target: 'apply', percentile: 'p999', base: 'durable' },
];
const withB = <T extends { target: OpenLoopVerdict['target'] }>(ts: T[], ab: boolean): T[] =>
  ab ? ts.flatMap((t) => (t.target === 'durable' ? [t] : [t, { ...t, target: `${t.target}-b` as T['target'] }])) : ts;
const TARGET_FRACTION = 0.5;
/** Longer than the checkpointer's idle delay (WAL_IDLE_MS, 1 s) and one check after it. */
const DISK_SETTLE_MS = 1_300;

const scenario = (id: string): Scenario => {
  const found = SCENARIOS.find((s) => s.id === id);
  if (!found) throw new Error(`no scenario ${id}`);
  return found;
};

/**
 * `--repeat=N`: N whole open-loop runs one after the other (each one's data removed before the
 * next), then every judged target's ratios over the runs (repeatSummary), also written to
 * .bench/open-loop-runs.json. With N = 1 this is one run.
 */
export const mainOpenLoopRepeated = async (): Promise<void> => {
  const runs: OpenLoopVerdict[][] = [];
  const abRuns: BOverA[][] = [];
  for (let run = 1; run <= REPEAT; run += 1) {
    if (REPEAT > 1) log(`\n=== open-loop run ${run} of ${REPEAT} ===`);
    const { verdicts, ab } = await mainOpenLoop();
    runs.push(verdicts);
    abRuns.push(ab);
    removeTempDirs();
  }
  if (REPEAT === 1) return;
  log('');
  const summary = [...repeatSummary(runs), ...abRepeatSummary(abRuns)];
  for (const line of summary) log(line);
  log(`results of every run written to ${writeRepeatedResults(runs, summary, abRuns)}`);
};

/** One open-loop run (see the top of this file); returns its verdicts and, in an A/B run, B over A at each rate. */
export const mainOpenLoop = async (): Promise<{ verdicts: OpenLoopVerdict[]; ab: BOverA[] }> => {
  if (SERVICE_ROOT !== ROOT) log(`service from ${SERVICE_ROOT}`);
  log(
    `bench, open loop: ${os.cpus().length} CPUs, node ${process.version}; rates ${RATES.join(', ')} × apply's maximum,` +
      ` ${OPEN_LOOP_DURATION_S} s per target and rate in ${ROUNDS} round(s)` +
      (OPEN_LOOP_LEAD_IN_S > 0 ? `, each after a lead-in of ${OPEN_LOOP_LEAD_IN_S} s not measured` : '') +
      `, up to ${MAX_CONNECTIONS} connections` +
      ` ${OPEN_LOOP_CONNECTIONS === 'kept' ? 'kept across rounds' : 'opened afresh in each round'};` +
      ` rate limiter ${RATE_LIMITS === 'off' ? 'off' : 'on with lifted limits'}`,
  );
  if (GC_TRACE && AB)
    throw new Error(
      '--gc-trace traces service A only, which would skew an A/B run: use it without --b-root, --b-env and --b-data-under',
    );
  prepareProfDir();
  const bare = await startCeiling('bare');
  const durable = await startCeiling('durable');
  const service = await startService(undefined, undefined, undefined, GC_TRACE ? GC_TRACE_FLAGS : []);
  const gcTrace = GC_TRACE ? new GcTraceReader() : undefined;
  if (gcTrace) void gcTrace.follow(service.proc.child.stdout!);
  const gcWindows = new Map<string, GcWindow[]>();
  // performance.now() when the trace's clock read 0: from its anchor, else the spawn (tens of ms earlier)
  const traceOrigin = () => gcTrace?.isolateStartedAt() ?? service.startedAt;
  const serviceB = AB
    ? await startService(B_ROOT ?? SERVICE_ROOT, B_ENV ?? {}, 'service-b', [], B_DATA_UNDER)
    : undefined;
  if (serviceB)
    log(
      `A/B: service B from ${B_ROOT ?? SERVICE_ROOT}${
        B_ENV
          ? ` with ${Object.entries(B_ENV)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')}`
          : ''
      }${B_DATA_UNDER ? `, its data under ${B_DATA_UNDER}` : ''}`,
    );
  log('creating the vouchers of validate and spread apply through the API (not timed) ...');
  await createVouchers(service.baseUrl, new Set(['validate', 'spread']));
  if (serviceB) await createVouchers(serviceB.baseUrl, new Set(['validate', 'spread']));

  const validate = scenario('validate');
  const apply = scenario('apply-spread');
  // One request first: a target that cannot succeed is a broken bench, not a slow service.
  for (const base of [service.baseUrl, ...(serviceB ? [serviceB.baseUrl] : [])])
    for (const s of [validate, apply]) {
      const probe = await api(base, 'POST', s.path, JSON.parse(s.body(1_000_000_000)));
      if (probe.status >= 300)
        throw new Error(`${s.id}: probe request to ${base} got ${probe.status} ${JSON.stringify(probe.body)}`);
    }
  const targets: Partial<
    Record<Target, { url: string; pid: number | undefined; body: (n: number) => string; title: string }>
  > = {
    bare: {
      url: `${bare.url}${CEILING_SCENARIO.path}`,
      pid: bare.proc.child.pid,
      body: CEILING_SCENARIO.body,
      title: 'bare express route',
    },
    durable: {
      url: `${durable.url}${CEILING_SCENARIO.path}`,
      pid: durable.proc.child.pid,
      body: CEILING_SCENARIO.body,
      title: DURABLE_CEILING_SCENARIO.title,
    },
    validate: {
      url: `${service.baseUrl}${validate.path}`,
      pid: service.proc.child.pid,
      body: validate.body,
      title: validate.title,
    },
    apply: {
      url: `${service.baseUrl}${apply.path}`,
      pid: service.proc.child.pid,
      body: apply.body,
      title: apply.title,
    },
    ...(serviceB
      ? {
          'validate-b': {
            url: `${serviceB.baseUrl}${validate.path}`,
            pid: serviceB.proc.child.pid,
            body: validate.body,
            title: `${validate.title}, B`,
          },
          'apply-b': {
            url: `${serviceB.baseUrl}${apply.path}`,
            pid: serviceB.proc.child.pid,
            body: apply.body,
            title: `${apply.title}, B`,
          },
        }
      : {}),
  };

  // Closed loop: warms each target up and measures its maximum; apply's sets the rates.
  const passes: Partial<Record<Target, Measured[]>> = {};
  for (const [pass, order] of closedLoopPasses(AB).entries()) {
    const warmupS = pass === 0 ? WARMUP_S : SECOND_PASS_WARMUP_S;
    for (const id of order) {
      const t = targets[id]!;
      log(
        `closed loop${pass === 0 ? '' : `, pass ${pass + 1}`}: ${t.title}, ${warmupS} s warm-up + ${DURATION_S} s ...`,
      );
      await quiet();
      const { measured } = await measure(
        { id, title: t.title, path: new URL(t.url).pathname, body: t.body },
        new URL(t.url).origin,
        t.pid,
        id === 'bare' || id === 'durable' ? null : (passes.bare?.[0] ?? null),
        warmupS,
      );
      if (measured.non2xx + measured.errors + measured.timeouts > 0)
        throw new Error(`${id}: ${measured.non2xx} non-2xx, ${measured.errors} errors in the closed-loop run`);
      (passes[id] ??= []).push(measured);
    }
  }
  const closed: Partial<Record<Target, Measured>> = Object.fromEntries(
    TARGET_ORDER.map((id) => [id, meanOfPasses(passes[id]!)]),
  );
  const applyMax = APPLY_MAX ?? closed.apply!.reqPerSec;
  log(
    APPLY_MAX === undefined
      ? `apply's maximum in this run: ${Math.round(applyMax)} req/s`
      : `apply's maximum taken as ${Math.round(applyMax)} req/s (--apply-max; measured in this run: ${Math.round(closed.apply!.reqPerSec)})`,
  );

  const firstRate = Math.max(1, Math.round(RATES[0]! * applyMax));
  const senderOf = (id: Target): HttpSender => {
    const t = targets[id]!;
    return httpSender({ url: t.url, method: 'POST', headers: HEADERS, body: () => takeBody(t.body) }, MAX_CONNECTIONS);
  };
  const kept = new Map<Target, HttpSender>();
  if (OPEN_LOOP_CONNECTIONS === 'kept') {
    log(`opening each target's connections: 1 s at ${firstRate} req/s, not measured ...`);
    for (const id of TARGET_ORDER) {
      const sender = senderOf(id);
      kept.set(id, sender);
      await runOpenLoop(sender, { rate: firstRate, durationS: 1, maxConnections: MAX_CONNECTIONS });
    }
  }

  const rows: OpenLoopRow[] = [];
  /** With --timeline: apply's worst stretches of each round, by rate. */
  const timeline: Array<{ rate: number; line: string; worstMs: number }> = [];
  const windows: Windows = {};
  const diskWaits: number[] = [];
  let diskBusy = 0;
  const roundS = OPEN_LOOP_DURATION_S / ROUNDS;
  for (const fraction of RATES) {
    const rate = Math.max(1, Math.round(fraction * applyMax));
    log(
      `open loop at ${rate} req/s (${fraction} × apply's maximum): ${ROUNDS} round(s) of ${roundS} s per target` +
        `${OPEN_LOOP_LEAD_IN_S > 0 ? ` (+ ${OPEN_LOOP_LEAD_IN_S} s of lead-in each)` : ''} ...`,
    );
    const runs = Object.fromEntries(TARGET_ORDER.map((id) => [id, [] as OpenLoopRun[]])) as Record<
      Target,
      OpenLoopRun[]
    >;
    const cpu = Object.fromEntries(
      TARGET_ORDER.map((id) => [id, [] as Array<ReturnType<ReturnType<typeof startCpuMeter>>>]),
    ) as Record<Target, Array<ReturnType<ReturnType<typeof startCpuMeter>>>>;
    for (let r = 0; r < ROUNDS; r += 1) {
      for (const id of roundOrder(r)) {
        const t = targets[id]!;
        await quiet();
        // wait out the writes the previous target left (after the idle checkpoint of its files)
        await sleep(DISK_SETTLE_MS);
        const disk = await waitForDisk();
        diskWaits.push(disk.waitedMs);
        if (!disk.quiet) diskBusy += 1;
        const stopCpu = startCpuMeter(t.pid);
        const startedMs = performance.now() - traceOrigin();
        const stopSampler = TIMELINE && id === 'apply' ? startThreadSampler(t.pid) : undefined;
        const roundStart = performance.now();
        const sender = kept.get(id) ?? senderOf(id);
        const run = await runOpenLoop(sender, {
          rate,
          durationS: roundS,
          maxConnections: MAX_CONNECTIONS,
          leadInS: OPEN_LOOP_LEAD_IN_S,
        });
        // the round's CPU covers its lead-in too: per request, it is divided by both
        const served = run.result.answered + (run.leadIn?.result.answered ?? 0);
        if (!kept.has(id)) sender.close();
        const meter = stopCpu();
        if (stopSampler) {
          // the whole round, its lead-in too: its stretches are timed from the round's start
          const latencies = run.leadIn
            ? Float64Array.of(...run.leadIn.samples.latencies, ...run.samples.latencies)
            : run.samples.latencies;
          const worst = worstStretches(latencies, rate, roundStart, stopSampler(), 3);
          // with --gc-trace, the main thread's collections in each
          const stretches = gcTrace ? withCollections(worst, gcTrace.main(), roundStart - traceOrigin()) : worst;
          for (const stretch of stretches)
            timeline.push({ rate, line: stretchLine(r, stretch), worstMs: stretch.worstMs });
        }
        if (gcTrace && (id === 'validate' || id === 'apply')) {
          const key = `${id}@${fraction}`;
          const window = {
            fromMs: startedMs,
            toMs: performance.now() - traceOrigin(),
            requests: served,
          };
          gcWindows.set(key, [...(gcWindows.get(key) ?? []), window]);
        }
        cpu[id].push(meter);
        runs[id].push(run);
        // --profile: the service's (A's) samples of this target at this rate (its last round).
        if (id === 'validate' || id === 'apply') windows[`${id}@${fraction}`] = { ...meter.window, requests: served };
      }
    }
    for (const id of TARGET_ORDER) {
      const meters = cpu[id];
      const answered = runs[id].map((run) => run.result.answered + (run.leadIn?.result.answered ?? 0));
      const leadIns = runs[id].flatMap((run) => (run.leadIn ? [run.leadIn] : []));
      const known = (xs: Array<number | null>) => xs.filter((x): x is number => x !== null);
      rows.push({
        fraction,
        rate,
        target: { id, title: targets[id]!.title },
        result: mergeRuns(runs[id]),
        leadIn: leadIns.length > 0 ? mergeRuns(leadIns) : null,
        serverCpu: median(known(meters.map((m) => m.serverCpu))),
        loadGenCpu: Math.max(...meters.map((m) => m.loadGenCpu)),
        otherCpu: Math.max(0, ...known(meters.map((m) => m.otherCpu))),
        ...mainThreadCpu(meters, answered),
        threadUsPerRequest: threadCpuPerRequest(meters, answered),
        threadKernelUsPerRequest: threadCpuPerRequest(meters, answered, 'kernel'),
      });
    }
  }
  for (const sender of kept.values()) sender.close();
  log(
    `before each target: ${DISK_SETTLE_MS} ms, then a wait for less than ${DISK_QUIET_BYTES / 1024 / 1024} MB of unwritten pages:` +
      ` median ${median(diskWaits)} ms, longest ${Math.max(...diskWaits)} ms` +
      (diskBusy > 0
        ? `, ${diskBusy} time(s) given up after ${DISK_WAIT_LIMIT_MS / 1000} s (other writers on the disk)`
        : ''),
  );
  await Promise.all([
    stopChild(service.proc),
    stopChild(bare.proc),
    stopChild(durable.proc),
    ...(serviceB ? [stopChild(serviceB.proc)] : []),
  ]);

  const verdicts: OpenLoopVerdict[] = [];
  for (const fraction of RATES) {
    const at = (id: Target) => rows.find((r) => r.fraction === fraction && r.target.id === id)!.result;
    for (const t of withB(OPEN_LOOP_TARGETS, AB)) {
      const ratio = at(t.target).latency[t.percentile] / at('bare').latency[t.percentile];
      const invalid = rows.some((r) => r.fraction === fraction && r.result.capHit);
      const failures = (['bare', t.target] as const).reduce(
        (n, id) => n + at(id).non2xx + at(id).errors + at(id).timeouts,
        0,
      );
      verdicts.push({
        ...t,
        fraction,
        ratio,
        verdict:
          fraction !== TARGET_FRACTION
            ? 'INFO'
            : invalid
              ? 'INVALID'
              : ratio <= t.max && failures === 0
                ? 'PASS'
                : 'MISS',
      });
    }
    for (const t of withB(DISK_SHARES, AB)) {
      const ratio = at(t.target).latency[t.percentile] / at(t.base!).latency[t.percentile];
      verdicts.push({ ...t, fraction, ratio, max: null, verdict: 'INFO' });
    }
  }
  printOpenLoop({ applyMax, closed, rows, verdicts, log });
  for (const rate of new Set(timeline.map((t) => t.rate))) {
    log(`apply's worst stretches of ${STRETCH_MS} ms at ${rate} req/s (service A, --timeline):`);
    for (const t of timeline
      .filter((x) => x.rate === rate)
      .sort((x, y) => y.worstMs - x.worstMs)
      .slice(0, 5))
      log(`  ${t.line}`);
  }
  const summaries = PROFILE ? reportProfiles(windows, log) : undefined;
  const gc = gcTrace ? reportGc(gcTrace, gcWindows) : undefined;
  const out = writeOpenLoopResults({ applyMax, closed, rows, verdicts, profiles: summaries, gc });
  log(`results written to ${out}`);
  return { verdicts, ab: bOverA(rows) };
};

/** Prints the main thread's collections of each target at each rate (--gc-trace) and returns them for the results file. */
const reportGc = (reader: GcTraceReader, windows: Map<string, GcWindow[]>): Record<string, GcSummary> => {
  const main = reader.main();
  const out: Record<string, GcSummary> = {};
  log("the service's main thread, garbage collections (V8's trace, all rounds):");
  for (const [key, ws] of windows) {
    const s = summarizeGc(main, ws);
    out[key] = s;
    const kb = (bytes: number | null) => (bytes === null ? 'n/a' : `${(bytes / 1000).toFixed(2)} kB`);
    log(
      `  ${key}: ${s.scavenges} scavenges in ${s.seconds.toFixed(1)} s (mean pause ${s.scavengePauseMeanMs?.toFixed(1) ?? '-'} ms),` +
        ` per request ${kb(s.promotedPerRequest)} promoted + ${kb(s.directOldPerRequest)} allocated in the old generation;` +
        ` ${s.fullCollections} full collections (pauses ${s.fullPausesMs.map((ms) => ms.toFixed(0)).join(', ') || '-'} ms)`,
    );
  }
  return out;
};
