/**
 * `npm run bench -- --scale`: how the service behaves as history grows. The service and the replay
 * run as `npm start` and `npm run replay` run them, compiled (`npm run build` first, in each
 * checkout measured). On one fresh DATA_DIR:
 *
 * 1. `spread`: N applications spread over 1,000 vouchers, then `hot`: N on one voucher, each phase
 *    in ten segments of N/10 applications, with each segment's throughput, p99 and the service's
 *    RSS right after it (with its anonymous and file-backed parts and the main thread's V8 heap);
 *    with each segment a reference round: the same applies (--scale-reference, default 20,000)
 *    on a fresh service of the same build with no history, whose throughput and p99 the segment's
 *    are also taken relative to, so that the machine's own drift cancels out of the phase's; the
 *    segment and its reference round take turns in --scale-slices slices (default 10);
 * 2. the service stopped, the disk used per file of DATA_DIR (and per application);
 * 3. the service started again on the same DATA_DIR, the first apply on the hot voucher timed
 *    (its whole history is loaded then), with RSS before and after; `--scale-restarts` times
 *    (default 3), the slowest first apply deciding the target;
 * 4. the service stopped, `scripts/replay.ts` rebuilding every read model of that DATA_DIR, its
 *    events per second (with --b-root=<dir>: the replay of that checkout too, alternating A and B
 *    on the same data, `--scale-replays` times each).
 *
 * Options: --scale-applications=<N> (default 1,000,000), --scale-reference=<N> (0: no reference
 * rounds), --scale-slices=<N>, --scale-restarts=<N>, --connections, --warmup (seconds of apply on a voucher of its own
 * before the first segment, default 15), --keep-data, --b-root.
 * Loopback only; every child stops at the end. Results in .bench/scale.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import {
  B_ROOT,
  CONNECTIONS,
  HOST,
  KEEP_DATA,
  ROOT,
  SCALE_APPLICATIONS,
  SCALE_REFERENCE,
  SCALE_REPLAYS,
  SCALE_RESTARTS,
  SCALE_SLICES,
  SERVICE_ROOT,
  WARMUP_S,
} from './cli.ts';
import { processCpuSeconds, statCpuSeconds } from './cpu.ts';
import { sleep } from '../lib/processes.ts';
import { takeBody } from './load.ts';
import {
  ensureBuilt,
  freePort,
  freshTempDir,
  startChild,
  startServiceProcess,
  stopChild,
  waitForHealth,
  type Child,
} from './processes.ts';
import { HEADERS, HOT_CODE, RUN, SPREAD_POOL, serviceEnv, spreadCode, voucherBody } from './scenarios.ts';
import {
  SCALE_TARGETS,
  diskReport,
  parseReplayOutput,
  p99Of,
  phaseReport,
  segmentSizes,
  verdicts,
  type PhaseReport,
  type SegmentRun,
} from './scaleReport.ts';
import { api, createVouchers } from './vouchers.ts';

const log = (msg: string): void => {
  process.stdout.write(`${msg}\n`);
};

const ORDER_JSON = JSON.stringify({
  value: 11_100,
  currency: 'USD',
  items: [
    { id: 'sku_shoes', price: 5_000, quantity: 1, category: 'footwear' },
    { id: 'sku_socks', price: 800, quantity: 3, category: 'apparel' },
    { id: 'sku_cap', price: 1_500, quantity: 2, category: 'apparel' },
  ],
});
const WARM_CODE = `BWARM${RUN}`;
const spreadPrefixes = Array.from(
  { length: SPREAD_POOL },
  (_, i) => `{"code":"${spreadCode(i)}","order_id":"sc_${RUN}_`,
);
const bodies = {
  warm: (n: number) => `{"code":"${WARM_CODE}","order_id":"sw_${RUN}_${n}","order":${ORDER_JSON}}`,
  spread: (n: number) => `${spreadPrefixes[n % SPREAD_POOL]}${n}","order":${ORDER_JSON}}`,
  hot: (n: number) => `{"code":"${HOT_CODE}","order_id":"sh_${RUN}_${n}","order":${ORDER_JSON}}`,
};

/** Resident set size of a process (Linux /proc), bytes; null elsewhere. */
const rssOf = (pid: number | undefined): number | null => {
  if (pid === undefined) return null;
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
};

/**
 * What a process has cost so far (Linux /proc): bytes it has written to storage (`write_bytes` of
 * /proc/<pid>/io: the WAL frames, checkpoints and files of every thread), its CPU time (user and
 * system, every thread) and its main thread's, ms; null elsewhere.
 */
const costOf = (pid: number | undefined): { writtenBytes: number; cpuMs: number; mainCpuMs: number } | null => {
  if (pid === undefined) return null;
  try {
    const written = /^write_bytes: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
    if (!written) return null;
    return {
      writtenBytes: Number(written[1]),
      cpuMs: statCpuSeconds(`/proc/${pid}/stat`) * 1000,
      mainCpuMs: statCpuSeconds(`/proc/${pid}/task/${pid}/stat`) * 1000,
    };
  } catch {
    return null;
  }
};

/** A segment's storage writes and CPU per application, from the costs before and after it. */
const perApplication = (
  before: ReturnType<typeof costOf>,
  after: ReturnType<typeof costOf>,
  applications: number,
): string => {
  if (!before || !after || applications === 0) return '';
  const us = (ms: number) => ((ms * 1000) / applications).toFixed(0);
  return `, ${((after.writtenBytes - before.writtenBytes) / applications / 1024).toFixed(1)} kB written and ${us(
    after.cpuMs - before.cpuMs,
  )} µs of CPU per application (main thread ${us(after.mainCpuMs - before.mainCpuMs)} µs)`;
};

/**
 * Where a process's memory is, from Linux's /proc: its anonymous resident memory (the V8 heap,
 * malloc's arenas with SQLite's page caches) and its resident file pages; and the V8 heap in use,
 * from the service's `GET /metrics`. Undefined parts are left out of the line.
 */
const memoryDetail = async (pid: number | undefined, baseUrl: string): Promise<string> => {
  const parts: string[] = [];
  try {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(rollup)?.[1] ?? NaN);
    const anon = kb('Anonymous');
    const file = kb('Rss') - anon;
    if (Number.isFinite(anon))
      parts.push(`anonymous ${(anon / 1024).toFixed(0)} MB, file ${(file / 1024).toFixed(0)} MB`);
  } catch {
    // not Linux, or the process is gone
  }
  try {
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    const heap = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics)?.[1];
    const external = /^nodejs_external_memory_bytes (\S+)$/m.exec(metrics)?.[1];
    if (heap) parts.push(`V8 heap used ${(Number(heap) / 2 ** 20).toFixed(0)} MB`);
    if (external) parts.push(`external ${(Number(external) / 2 ** 20).toFixed(0)} MB`);
  } catch {
    // METRICS=off, or the service is gone
  }
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
};

const startOn = async (dataDir: string): Promise<{ proc: Child; baseUrl: string }> => {
  const port = await freePort();
  const proc = startServiceProcess('service', SERVICE_ROOT, serviceEnv(port, dataDir));
  const baseUrl = `http://${HOST}:${port}`;
  await waitForHealth(proc, baseUrl, 120_000);
  return { proc, baseUrl };
};

const autocannonOptions = (url: string, body: (n: number) => string, amount: number | null, seconds: number) => ({
  url: `${url}/v1/vouchers/apply`,
  // autocannon refuses more connections than requests: a small segment or reference round uses fewer
  connections: amount === null ? CONNECTIONS : Math.max(1, Math.min(CONNECTIONS, amount)),
  pipelining: 1,
  timeout: 10,
  // autocannon ends a run at its next sample after the last answer: every 50 ms instead of every
  // second, so that a segment's time (and its req/s) is not rounded up to whole seconds
  sampleInt: 50,
  ...(amount === null ? { duration: seconds } : { amount }),
  requests: [
    {
      method: 'POST' as const,
      headers: HEADERS,
      setupRequest: (req: { body?: string | Buffer }) => {
        req.body = takeBody(body);
        return req;
      },
    },
  ],
});

/** Sends `amount` applies (or, with `seconds`, as many as fit) with distinct order ids. */
const load = async (url: string, body: (n: number) => string, amount: number | null, seconds = 0) => {
  const started = performance.now();
  const result = await autocannon(autocannonOptions(url, body, amount, seconds));
  return { result, seconds: (performance.now() - started) / 1000 };
};

/**
 * One slice of a paired segment: `amount` applies, every answer's latency (ms), and the seconds
 * from the start to the last answer (autocannon's own end, up to a sample later, is left out).
 */
const slice = (url: string, body: (n: number) => string, amount: number) =>
  new Promise<{ result: autocannon.Result; seconds: number; latencies: number[] }>((resolve, reject) => {
    const latencies: number[] = [];
    const started = performance.now();
    let last = started;
    const instance = autocannon(autocannonOptions(url, body, amount, 0), (error, result) =>
      error ? reject(error as Error) : resolve({ result, seconds: (last - started) / 1000, latencies }),
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      latencies.push(responseTime);
      last = performance.now();
    });
  });

/** A process counts as idle once it used under 5 ms of CPU in 50 ms (a tenth of a core). */
const IDLE_CPU_MS = 5;
const IDLE_WINDOW_MS = 50;
const IDLE_WAIT_LIMIT_MS = 3_000;

/**
 * Waits (at most IDLE_WAIT_LIMIT_MS) until a service has done the work its last slice left
 * behind (projector threads catching up, checkpoints), so that it does not run during the other
 * service's slice.
 */
const waitIdle = async (pid: number | undefined): Promise<void> => {
  const cpuMs = () => (processCpuSeconds(pid) ?? 0) * 1000;
  const until = performance.now() + IDLE_WAIT_LIMIT_MS;
  let before = cpuMs();
  while (performance.now() < until) {
    await sleep(IDLE_WINDOW_MS);
    const now = cpuMs();
    if (now - before < IDLE_CPU_MS) return;
    before = now;
  }
};

/** Creates the warm-up voucher and applies on it for WARMUP_S seconds: the applications made. */
const warmUp = async (baseUrl: string): Promise<number> => {
  const warm = await api(baseUrl, 'POST', '/v1/vouchers', voucherBody(WARM_CODE, 1, false));
  if (warm.status !== 201) throw new Error(`creating ${WARM_CODE}: ${warm.status} ${JSON.stringify(warm.body)}`);
  return WARMUP_S > 0 ? (await load(baseUrl, bodies.warm, null, WARMUP_S)).result['2xx'] : 0;
};

/**
 * A reference service: a service of the same build started on a fresh DATA_DIR, with the phase's
 * vouchers and as long a warm-up as the measured service had (--warmup). `stop` stops it and
 * deletes its DATA_DIR.
 */
const referenceService = async (id: PhaseReport['id']) => {
  const dataDir = freshTempDir('voucher-scale-reference-');
  const service = await startOn(dataDir);
  const stop = async () => {
    await stopChild(service.proc);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await createVouchers(service.baseUrl, new Set([id]));
    await warmUp(service.baseUrl);
  } catch (error) {
    await stop();
    throw error;
  }
  return { ...service, stop };
};

/**
 * A segment paired with its reference round: the reference service is started first (fresh,
 * warmed up), then the segment's `size` applies on the measured service and the reference's
 * `referenceSize` go in SCALE_SLICES alternating slices, each service left to finish the work its
 * slice left behind before the other's starts. Both therefore meet the machine's slower and
 * faster stretches alike; each side's req/s is its applies over the sum of its slices' seconds,
 * its p99 that of all its answers.
 */
const pairedSegment = async (
  id: PhaseReport['id'],
  service: { proc: Child; baseUrl: string },
  body: (n: number) => string,
  size: number,
  referenceSize: number,
): Promise<SegmentRun> => {
  const reference = await referenceService(id);
  try {
    const measured = { requests: 0, ok2xx: 0, failures: 0, seconds: 0, latencies: [] as number[] };
    const theirs = { ok2xx: 0, seconds: 0, latencies: [] as number[] };
    const referenceSlices = segmentSizes(referenceSize, SCALE_SLICES);
    for (const [i, amount] of segmentSizes(size, SCALE_SLICES).entries()) {
      await waitIdle(reference.proc.child.pid);
      const mine = await slice(service.baseUrl, body, amount);
      measured.requests += mine.result.requests.total;
      measured.ok2xx += mine.result['2xx'];
      measured.failures += mine.result.non2xx + mine.result.errors + mine.result.timeouts;
      measured.seconds += mine.seconds;
      for (const ms of mine.latencies) measured.latencies.push(ms);
      const referenceAmount = referenceSlices[i];
      if (referenceAmount === undefined) continue;
      await waitIdle(service.proc.child.pid);
      const other = await slice(reference.baseUrl, body, referenceAmount);
      if (other.result['2xx'] !== referenceAmount)
        throw new Error(`reference round: ${other.result['2xx']} of ${referenceAmount} applied`);
      theirs.ok2xx += other.result['2xx'];
      theirs.seconds += other.seconds;
      for (const ms of other.latencies) theirs.latencies.push(ms);
    }
    return {
      requests: measured.requests,
      ok2xx: measured.ok2xx,
      failures: measured.failures,
      seconds: measured.seconds,
      p99Ms: p99Of(measured.latencies),
      rssBytes: rssOf(service.proc.child.pid),
      reference: { reqPerSec: theirs.ok2xx / theirs.seconds, p99Ms: p99Of(theirs.latencies) },
    };
  } finally {
    await reference.stop();
  }
};

/** A segment without a reference round: `size` applies in one run. */
const plainSegment = async (
  service: { proc: Child; baseUrl: string },
  body: (n: number) => string,
  size: number,
): Promise<SegmentRun> => {
  const { result, seconds } = await load(service.baseUrl, body, size);
  return {
    requests: result.requests.total,
    ok2xx: result['2xx'],
    failures: result.non2xx + result.errors + result.timeouts,
    seconds,
    p99Ms: result.latency.p99,
    rssBytes: rssOf(service.proc.child.pid),
  };
};

const runPhase = async (
  id: PhaseReport['id'],
  title: string,
  service: { proc: Child; baseUrl: string },
  body: (n: number) => string,
): Promise<PhaseReport> => {
  const runs: SegmentRun[] = [];
  for (const size of segmentSizes(SCALE_APPLICATIONS)) {
    const before = costOf(service.proc.child.pid);
    const run =
      SCALE_REFERENCE > 0
        ? await pairedSegment(id, service, body, size, Math.min(SCALE_REFERENCE, size))
        : await plainSegment(service, body, size);
    const cost = perApplication(before, costOf(service.proc.child.pid), run.ok2xx);
    const detail = await memoryDetail(service.proc.child.pid, service.baseUrl);
    runs.push(run);
    const done = runs.reduce((n, r) => n + r.ok2xx, 0);
    const reference = run.reference
      ? `; reference ${run.reference.reqPerSec.toFixed(0)} req/s, p99 ${run.reference.p99Ms.toFixed(1)} ms`
      : '';
    log(
      `  ${id} ${String(done).padStart(9)}: ${(run.requests / run.seconds).toFixed(0)} req/s, p99 ${run.p99Ms.toFixed(1)} ms, RSS ${run.rssBytes === null ? '?' : (run.rssBytes / 2 ** 20).toFixed(0)} MB${detail}${cost}${run.failures > 0 ? `, ${run.failures} failed` : ''}${reference}`,
    );
  }
  return phaseReport(id, title, runs);
};

const filesOf = (dir: string, base = dir): Array<{ file: string; bytes: number }> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesOf(full, base);
    return entry.isFile() ? [{ file: path.relative(base, full), bytes: fs.statSync(full).size }] : [];
  });

/** The first apply on the hot voucher after a restart (the `round`-th): its time, and RSS before and after. */
const firstApplyAfterRestart = async (dataDir: string, round: number) => {
  const started = performance.now();
  const service = await startOn(dataDir);
  const startMs = performance.now() - started;
  const rssBefore = rssOf(service.proc.child.pid);
  const applyOnce = async (n: number) => {
    const t = performance.now();
    const res = await api(service.baseUrl, 'POST', '/v1/vouchers/apply', JSON.parse(bodies.hot(n)));
    if (res.status >= 300) throw new Error(`apply after restart: ${res.status} ${JSON.stringify(res.body)}`);
    return performance.now() - t;
  };
  const firstMs = await applyOnce(1_000_000_000 + 2 * round);
  const rssAfter = rssOf(service.proc.child.pid);
  const secondMs = await applyOnce(1_000_000_001 + 2 * round);
  await stopChild(service.proc);
  return { startMs, firstMs, secondMs, rssBeforeMb: mbOf(rssBefore), rssAfterMb: mbOf(rssAfter) };
};

const mbOf = (bytes: number | null) => (bytes === null ? null : bytes / 2 ** 20);

/** `npm run replay`'s script (compiled) from `root` on `dataDir`: its events per second. */
const replay = async (root: string, dataDir: string) => {
  const proc = startChild('replay', root, 'dist/scripts/replay.js', { DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, [], true);
  const { code } = await proc.exited;
  if (code !== 0) throw new Error(`replay from ${root} failed (${code}):\n${proc.output()}`);
  return parseReplayOutput(proc.stdout());
};

export const mainScale = async (): Promise<void> => {
  for (const root of new Set([SERVICE_ROOT, ...(B_ROOT ? [B_ROOT] : [])])) {
    log(`npm run build in ${root} ...`);
    ensureBuilt(root);
  }
  const dataDir = freshTempDir('voucher-scale-', { keep: KEEP_DATA });
  if (KEEP_DATA) log(`DATA_DIR ${dataDir} (kept)`);
  log(
    `scale bench: ${os.cpus().length} CPUs, node ${process.version}, ${CONNECTIONS} connections, ` +
      `${SCALE_APPLICATIONS} applications over ${SPREAD_POOL} vouchers, then ${SCALE_APPLICATIONS} on one voucher`,
  );
  const service = await startOn(dataDir);
  log(`creating ${SPREAD_POOL + 2} vouchers through the API (not timed) ...`);
  await createVouchers(service.baseUrl, new Set(['spread', 'hot']));
  if (WARMUP_S > 0) log(`warming up: ${WARMUP_S} s of apply on a voucher of its own ...`);
  const warmApplications = await warmUp(service.baseUrl);
  const rssStartMb = mbOf(rssOf(service.proc.child.pid));
  log(`spread: ${SCALE_APPLICATIONS} applications over ${SPREAD_POOL} vouchers ...`);
  const spread = await runPhase('spread', `${SPREAD_POOL} vouchers`, service, bodies.spread);
  log(`hot: ${SCALE_APPLICATIONS} applications on one voucher ...`);
  const hot = await runPhase('hot', 'one voucher', service, bodies.hot);
  await stopChild(service.proc);

  const applications = warmApplications + spread.segments.at(-1)!.upTo + hot.segments.at(-1)!.upTo;
  const disk = diskReport(filesOf(dataDir), applications);
  log(
    `disk: ${(disk.totalBytes / 2 ** 20).toFixed(0)} MB, ${disk.bytesPerApplication.toFixed(0)} bytes per application`,
  );
  for (const f of disk.files)
    log(
      `  ${f.file.padEnd(32)} ${(f.bytes / 2 ** 20).toFixed(1).padStart(8)} MB ${f.bytesPerApplication.toFixed(0).padStart(6)} B/application`,
    );

  log(`restarting the service ${SCALE_RESTARTS} time(s), each time followed by two applies on the hot voucher ...`);
  const restarts: Array<Awaited<ReturnType<typeof firstApplyAfterRestart>>> = [];
  for (let round = 0; round < SCALE_RESTARTS; round += 1) {
    const restart = await firstApplyAfterRestart(dataDir, round);
    restarts.push(restart);
    log(
      `  started in ${restart.startMs.toFixed(0)} ms; first apply ${restart.firstMs.toFixed(1)} ms, second ${restart.secondMs.toFixed(1)} ms; ` +
        `RSS ${restart.rssBeforeMb?.toFixed(0)} → ${restart.rssAfterMb?.toFixed(0)} MB`,
    );
  }
  // The target holds for every restart: the slowest first apply decides.
  const slowestFirstMs = Math.max(...restarts.map((r) => r.firstMs));

  const roots: Array<[string, string]> = [['A', SERVICE_ROOT]];
  if (B_ROOT) roots.push(['B', B_ROOT]);
  const replays: Array<{ label: string; root: string; events: number; ms: number; eventsPerSec: number | null }> = [];
  for (let round = 0; round < (B_ROOT ? SCALE_REPLAYS : 1); round += 1)
    for (const [label, root] of round % 2 === 0 ? roots : [...roots].reverse()) {
      log(`replay ${label}${B_ROOT ? ` (${root})` : ''} ...`);
      const r = await replay(root, dataDir);
      log(`  ${r.events} events in ${r.ms} ms: ${r.eventsPerSec?.toFixed(0)} events/s`);
      replays.push({ label, root, ...r });
    }
  const replayA = replays.filter((r) => r.label === 'A').map((r) => r.eventsPerSec ?? 0);
  const result = {
    applications: SCALE_APPLICATIONS,
    warmApplications,
    rssStartMb,
    phases: [spread, hot],
    disk,
    restarts,
    replays,
    targets: SCALE_TARGETS,
    verdicts: verdicts({
      phases: [spread, hot],
      firstApplyMs: slowestFirstMs,
      replayEventsPerSec: replayA.length > 0 ? Math.max(...replayA) : null,
    }),
  };
  log('');
  for (const phase of [spread, hot])
    log(
      `${phase.id.padEnd(6)} throughput ${pct(phase.throughputDrift)} and p99 ${pct(phase.p99Drift)} from the first segment to the last` +
        (phase.p99DriftVsReference === null
          ? ''
          : ` (against the reference rounds: ${pct(phase.throughputDriftVsReference)} and ${pct(phase.p99DriftVsReference)})`) +
        `, peak RSS ${phase.peakRssMb?.toFixed(0)} MB`,
    );
  log(`verdicts: ${JSON.stringify(result.verdicts)}`);
  const out = path.join(ROOT, '.bench', 'scale.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  log(`results written to ${out}`);
};

const pct = (x: number | null) => (x === null ? 'n/a' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`);
