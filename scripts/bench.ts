/**
 * `npm run bench`: throughput of the redemption endpoints against a bare-express ceiling.
 *
 * The service runs in a CHILD process (`node --import tsx src/main.ts`) on a fresh temp DATA_DIR,
 * so the load generator (autocannon, in this process) and the server do not share an event loop.
 * A bare express app with one JSON route (scripts/bench/ceiling.ts), also a child process, is
 * measured first with the same autocannon settings; every scenario is reported as a ratio to it.
 * The machine may be shared (other processes take CPU now and then), so the ceiling is measured
 * again (3 s, no warm-up: it is warm) right before each scenario and the ratio uses that adjacent
 * measurement (--ceiling=once: only the first one, for a shorter run).
 *
 * It is a report, not a test: the exit code is 0 even when a target is missed, and non-zero only
 * when the bench itself failed (a child did not start, setup requests failed, ...).
 * Results are also written to .bench/last.json.
 *
 * Options (after `npm run bench --`):
 *   --duration=<s>      measured seconds per scenario (default 5; a 1 s warm-up is not counted)
 *   --connections=<n>   concurrent connections (default 32)
 *   --only=<ids>        comma-separated scenario ids (ceiling always runs), e.g. --only=apply-hot
 *   --profile           run the server child with --cpu-prof; a summary of the profile is printed
 *                       per scenario (the samples of its measured seconds; raw .cpuprofile files
 *                       are kept in .bench/prof/). Profiling slows the server: its req/s are not
 *                       comparable with a run without --profile.
 *   --keep-data         keep the service's DATA_DIR (its path is printed) for a look at the stores
 *   --service-root=<dir> run the service from another checkout (e.g. a git worktree with a change to
 *                       compare; it needs its node_modules); the ceiling and the bench stay here
 *   --ceiling=once      measure the ceiling once, not before every scenario
 *   --rate-limits=off   run the service without its rate limiter (RATE_LIMITS=off). By default the
 *                       limiter runs, as in production, with limits far above what the bench sends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { ANALYTICS_SCENARIO_ID, benchAnalytics } from './bench/analytics.ts';
import { formatSummary, loadProfile, summariseProfile, type ProfileSummary } from './bench/profile.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const HOST = '127.0.0.1';

const args = new Map(process.argv.slice(2).map((a) => {
  const [k, v] = a.replace(/^--/, '').split('=');
  return [k!, v ?? 'true'] as const;
}));
const DURATION_S = Number(args.get('duration') ?? 5);
const WARMUP_S = 1;
const CONNECTIONS = Number(args.get('connections') ?? 32);
const ONLY = args.get('only')?.split(',');
const PROFILE = args.has('profile');
const KEEP_DATA = args.has('keep-data');
const CEILING_ONCE = args.get('ceiling') === 'once';
/** Seconds of each re-measurement of the ceiling before a scenario (it is warm by then). */
const RECHECK_S = Math.min(DURATION_S, 3);
const SERVICE_ROOT = path.resolve(args.get('service-root') ?? ROOT);
/**
 * The service limits requests per API key and endpoint group (src/http/rateLimits.ts, read from
 * RATE_LIMITS in src/config.ts). The bench lifts the limits of the groups it uses instead of
 * turning the limiter off, so that the limiter's own cost is measured as in production.
 */
const RATE_LIMITS = args.get('rate-limits') === 'off' ? 'off'
  : JSON.stringify({ create: 1_000_000_000, validate: 1_000_000_000, apply: 1_000_000_000, read: 1_000_000_000 });

const VALIDATE_POOL = 100;
const SPREAD_POOL = 1_000;

interface Target { ratio: number }
interface Scenario {
  id: string;
  /** Which voucher pool the scenario needs. */
  pool: 'validate' | 'spread' | 'hot';
  title: string;
  path: string;
  target?: Target;
  /** Builds the body of the n-th request (n counts across all connections). */
  body(n: number): string;
}

interface Measured {
  id: string;
  title: string;
  reqPerSec: number;
  p50: number;
  p99: number;
  total: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** The ceiling's req/s the ratio is taken against (measured right before this scenario). */
  ceilingReqPerSec: number | null;
  ratio: number | null;
  target: number | null;
  verdict: 'PASS' | 'MISS' | 'INFO' | 'BASE';
  /** CPU time over wall time, 1.0 = one core busy. */
  serverCpu: number | null;
  loadGenCpu: number;
  /** CPU used by every other process on the machine meanwhile (other sessions, the OS). */
  otherCpu: number | null;
  /** Server CPU milliseconds per completed request. */
  serverCpuMsPerReq: number | null;
  /** Ceiling's CPU per request over this scenario's: the ratio with CPU contention taken out. */
  cpuRatio: number | null;
}

// ---------------------------------------------------------------------------------------------
// Children
// ---------------------------------------------------------------------------------------------

interface Child { name: string; proc: ChildProcess; output: string[] }
const children: Child[] = [];
const tempDirs: string[] = [];

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const probe = net.createServer();
  probe.unref();
  probe.on('error', reject);
  probe.listen(0, HOST, () => {
    const { port } = probe.address() as net.AddressInfo;
    probe.close(() => resolve(port));
  });
});

const startChild = (name: string, cwd: string, script: string, env: Record<string, string>, nodeFlags: string[] = []): Child => {
  const proc = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', script], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child: Child = { name, proc, output: [] };
  // A failed spawn (bad cwd, missing node) must end the bench through its cleanup, not crash it.
  proc.on('error', (error) => void abort(new Error(`${name} could not be started: ${error.message}`)));
  const keep = (chunk: Buffer) => {
    child.output.push(chunk.toString());
    if (child.output.length > 200) child.output.shift();
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  children.push(child);
  return child;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const waitForHealth = async (child: Child, baseUrl: string, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${child.name} exited (${child.proc.exitCode ?? child.proc.signalCode}) before it was healthy:\n${child.output.join('')}`);
    }
    try {
      const res = await fetch(`${baseUrl}/health`);
      if (res.ok) return;
    } catch { /* not listening yet */ }
    await sleep(100);
  }
  throw new Error(`${child.name} not healthy after ${timeoutMs} ms:\n${child.output.join('')}`);
};

const stopChild = async (child: Child): Promise<void> => {
  const { proc } = child;
  if (proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return; // never started, or gone
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const graceful = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
  if (!graceful) { proc.kill('SIGKILL'); await exited; }
};

const cleanUp = async (): Promise<void> => {
  await Promise.all(children.map(stopChild));
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
};

/** utime + stime of a process in seconds (Linux /proc; null elsewhere). */
const processCpuSeconds = (pid: number | undefined): number | null => {
  if (pid === undefined) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
};

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat; null elsewhere. */
const machineCpuSeconds = (): number | null => {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
  } catch {
    return null;
  }
};

/**
 * Other sessions may be using the machine: before a measurement, wait (from a budget shared by
 * the whole run) for half a second in which the machine is almost idle. Best effort.
 */
let quietBudgetMs = 10_000;
const waitForQuiet = async (): Promise<{ waitedMs: number; quiet: boolean }> => {
  const started = Date.now();
  for (;;) {
    const before = machineCpuSeconds();
    if (before === null) return { waitedMs: 0, quiet: true };
    await sleep(500);
    const busyCores = ((machineCpuSeconds() ?? before) - before) / 0.5;
    const waitedMs = Date.now() - started;
    if (busyCores < 0.25) return { waitedMs, quiet: true };
    if (waitedMs >= quietBudgetMs) { quietBudgetMs = 0; return { waitedMs, quiet: false }; }
    quietBudgetMs -= 500;
  }
};

// ---------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------

const RUN = randomBytes(4).toString('hex');
const API_KEY = `sk_test_${randomBytes(24).toString('base64url').replace(/[^A-Za-z0-9]/g, '').padEnd(32, '0').slice(0, 32)}`;
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };

const ITEMS = [
  { id: 'sku_shoes', price: 5_000, quantity: 1, category: 'footwear' },
  { id: 'sku_socks', price: 800, quantity: 3, category: 'apparel' },
  { id: 'sku_cap', price: 1_500, quantity: 2, category: 'apparel' },
];
const ORDER_VALUE = 5_000 + 2_400 + 3_000 + 700; // items plus shipping
const ORDER = { value: ORDER_VALUE, currency: 'USD', items: ITEMS };

const iso = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A percentage or fixed voucher with a few conditions that the bench orders all meet. */
const voucherBody = (code: string, i: number, withMaxUses: boolean): Record<string, unknown> => {
  const conditions: Record<string, unknown> = {};
  if (i % 2 === 0) conditions.min_order_value = 5_000;
  if (i % 3 === 0) { conditions.valid_from = iso(-86_400_000); conditions.valid_until = iso(30 * 86_400_000); }
  if (i % 5 === 1) conditions.product_ids = ['sku_shoes', 'sku_cap'];
  if (i % 5 === 2) conditions.excluded_product_ids = ['sku_socks'];
  if (withMaxUses && i % 7 === 0) conditions.max_uses = 1_000_000;
  const percentage = i % 2 === 0;
  return {
    code,
    type: percentage ? 'percentage' : 'fixed',
    value: percentage ? 5 + (i % 20) : 100 + (i % 10) * 50,
    ...(i % 4 === 0 ? { currency: 'USD' } : {}),
    conditions,
  };
};

const validateCode = (i: number) => `BV${RUN}${String(i).padStart(3, '0')}`;
const spreadCode = (i: number) => `BA${RUN}${String(i).padStart(4, '0')}`;
const HOT_CODE = `BHOT${RUN}`;

const api = async (baseUrl: string, method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: any }> => {
  const res = await fetch(`${baseUrl}${urlPath}`, { method, headers: HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* keep text */ }
  return { status: res.status, body: parsed };
};

/** Runs `task(i)` for i in [0, count) with at most `concurrency` in flight. */
const pool = async (count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> => {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await task(next++);
  }));
};

const createVouchers = async (baseUrl: string, needed: Set<'validate' | 'spread' | 'hot'>): Promise<{ hotId?: string }> => {
  const create = async (body: Record<string, unknown>) => {
    const res = await api(baseUrl, 'POST', '/v1/vouchers', body);
    if (res.status !== 201) throw new Error(`creating ${String(body.code)} failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string };
  };
  if (needed.has('validate')) await pool(VALIDATE_POOL, 8, async (i) => { await create(voucherBody(validateCode(i), i, true)); });
  if (needed.has('spread')) await pool(SPREAD_POOL, 8, async (i) => { await create(voucherBody(spreadCode(i), i, false)); });
  if (!needed.has('hot')) return {};
  const hot = await create({ code: HOT_CODE, type: 'percentage', value: 10, currency: 'USD', conditions: { min_order_value: 1_000 } });
  return { hotId: hot.id };
};

// Pre-serialised pieces, so the load generator spends little CPU per request.
const ORDER_JSON = JSON.stringify(ORDER);
const validateBodies = Array.from({ length: VALIDATE_POOL }, (_, i) =>
  JSON.stringify({ code: validateCode(i), order: ORDER, customer: { id: `cus_${i}`, segment: 'regular' } }));
const spreadPrefixes = Array.from({ length: SPREAD_POOL }, (_, i) => `{"code":"${spreadCode(i)}","order_id":"ord_${RUN}_`);
const hotPrefix = `{"code":"${HOT_CODE}","order_id":"ord_${RUN}_hot_`;
const orderSuffix = `","order":${ORDER_JSON}}`;

const SCENARIOS: Scenario[] = [
  {
    id: 'validate', pool: 'validate', title: `validate (${VALIDATE_POOL} vouchers)`, path: '/v1/vouchers/validate', target: { ratio: 0.6 },
    body: (n) => validateBodies[n % VALIDATE_POOL]!,
  },
  {
    id: 'apply-spread', pool: 'spread', title: `apply spread (${SPREAD_POOL} vouchers)`, path: '/v1/vouchers/apply', target: { ratio: 0.4 },
    body: (n) => `${spreadPrefixes[n % SPREAD_POOL]}${n}${orderSuffix}`,
  },
  {
    id: 'apply-hot', pool: 'hot', title: 'apply hot (1 voucher)', path: '/v1/vouchers/apply', target: { ratio: 0.3 },
    body: (n) => `${hotPrefix}${n}${orderSuffix}`,
  },
  {
    // No target: shows what keeping a quote (order.id on validate) costs over plain validate.
    id: 'validate-quote', pool: 'validate', title: 'validate + quote (order.id)', path: '/v1/vouchers/validate',
    body: (n) => `{"code":"${validateCode(n % VALIDATE_POOL)}","order":{"id":"q_${RUN}_${n}",${ORDER_JSON.slice(1)}}`,
  },
];

// ---------------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------------

/** One autocannon run (a warm-up run, then the measured one) with a distinct body per request. */
const load = async (url: string, body: (n: number) => string, serverPid: number | undefined, warmupS = WARMUP_S, durationS = DURATION_S) => {
  let n = 0;
  // Requests are built per call so each one can differ (distinct order ids).
  const setupRequest = (req: any) => { req.body = body(n++); return req; };
  const common = {
    url,
    connections: CONNECTIONS,
    pipelining: 1,
    timeout: 10,
    requests: [{ method: 'POST' as const, headers: HEADERS, setupRequest }],
  };
  // Warm-up as a separate short run: autocannon's own warm-up option is not in its typings, and
  // a separate run lets the CPU counters cover the measured part only.
  const warm = warmupS > 0 ? await autocannon({ ...common, duration: warmupS }) : { '2xx': 0, non2xx: 0, errors: 0 };
  const cpuBefore = process.cpuUsage();
  const serverBefore = processCpuSeconds(serverPid);
  const machineBefore = machineCpuSeconds();
  const started = process.hrtime.bigint();
  const result = await autocannon({ ...common, duration: durationS });
  const ended = process.hrtime.bigint();
  const wall = Number(ended - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const serverAfter = processCpuSeconds(serverPid);
  const machineAfter = machineCpuSeconds();
  const loadGenCpu = (cpu.user + cpu.system) / 1e6 / wall;
  const serverCpu = serverBefore !== null && serverAfter !== null ? (serverAfter - serverBefore) / wall : null;
  const machineCpu = machineBefore !== null && machineAfter !== null ? (machineAfter - machineBefore) / wall : null;
  return {
    result,
    /** The measured run, in µs of the monotonic clock (to cut CPU profiles). */
    window: { fromUs: Number(started / 1000n), toUs: Number(ended / 1000n) },
    warmup2xx: warm['2xx'],
    warmupNon2xx: warm.non2xx + warm.errors,
    loadGenCpu,
    serverCpu,
    serverCpuSeconds: serverCpu === null ? null : serverCpu * wall,
    otherCpu: machineCpu !== null && serverCpu !== null ? Math.max(0, machineCpu - serverCpu - loadGenCpu) : null,
  };
};

const measure = async (
  scenario: Pick<Scenario, 'id' | 'title' | 'path' | 'target' | 'body'>, baseUrl: string, pid: number | undefined,
  ceiling: Measured | null, warmupS = WARMUP_S, durationS = DURATION_S,
) => {
  const { result, window, loadGenCpu, serverCpu, serverCpuSeconds, otherCpu, warmup2xx, warmupNon2xx } = await load(`${baseUrl}${scenario.path}`, scenario.body, pid, warmupS, durationS);
  const reqPerSec = result.requests.mean;
  const ratio = ceiling ? reqPerSec / ceiling.reqPerSec : null;
  const completed = result['2xx'] + result.non2xx;
  const serverCpuMsPerReq = serverCpuSeconds !== null && completed > 0 ? (serverCpuSeconds * 1000) / completed : null;
  const cpuRatio = ceiling?.serverCpuMsPerReq && serverCpuMsPerReq ? ceiling.serverCpuMsPerReq / serverCpuMsPerReq : null;
  const failures = result.non2xx + result.errors + result.timeouts;
  const verdict: Measured['verdict'] = ceiling === null ? 'BASE'
    : scenario.target === undefined ? 'INFO'
      : ratio! >= scenario.target.ratio && failures === 0 ? 'PASS' : 'MISS';
  const measured: Measured = {
    id: scenario.id, title: scenario.title, reqPerSec, p50: result.latency.p50, p99: result.latency.p99,
    total: result.requests.total, ok2xx: result['2xx'], non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts,
    ceilingReqPerSec: ceiling?.reqPerSec ?? null, ratio, target: scenario.target?.ratio ?? null, verdict, serverCpu, loadGenCpu, otherCpu, serverCpuMsPerReq, cpuRatio,
  };
  return { measured, window, warmup2xx, warmupNon2xx };
};

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const printTable = (rows: Measured[]): void => {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'ceiling req/s', 'ratio', 'target', 'result', 'CPU srv/gen/other', 'srv CPU ms/req', 'CPU ratio'];
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
    `${pctOf(r.serverCpu)} / ${pctOf(r.loadGenCpu)} / ${pctOf(r.otherCpu)}`,
    r.serverCpuMsPerReq === null ? '?' : r.serverCpuMsPerReq.toFixed(3),
    r.cpuRatio === null ? (r.verdict === 'BASE' ? '1.00×' : '?') : `${r.cpuRatio.toFixed(2)}×`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(`\n${row(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${lines.map(row).join('\n')}\n`);
};

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const main = async (): Promise<void> => {
  const log = (msg: string) => process.stdout.write(`${msg}\n`);
  if (SERVICE_ROOT !== ROOT) log(`service from ${SERVICE_ROOT}`);
  log(`bench: ${os.cpus().length} CPUs, node ${process.version}, ${CONNECTIONS} connections, pipelining 1, ${WARMUP_S} s warm-up + ${DURATION_S} s per scenario,`
    + ` rate limiter ${RATE_LIMITS === 'off' ? 'off' : 'on with lifted limits'}`);

  const profDir = path.join(ROOT, '.bench', 'prof');
  if (PROFILE) {
    fs.rmSync(profDir, { recursive: true, force: true });
    fs.mkdirSync(path.join(profDir, 'ceiling'), { recursive: true });
    fs.mkdirSync(path.join(profDir, 'service'), { recursive: true });
  }
  const cpuProf = (name: string) => (PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profDir, name)}`] : []);
  /** Measured parts, in µs of the monotonic clock (see ProfileWindow), and their request counts. */
  const windows: Record<string, { fromUs: number; toUs: number; requests: number }> = {};

  // Ceiling first. It stays up (idle, it costs nothing) to be measured again before each scenario.
  const ceilingPort = await freePort();
  const ceilingChild = startChild('ceiling', ROOT, 'scripts/bench/ceiling.ts', { PORT: String(ceilingPort), HOST }, cpuProf('ceiling'));
  const ceilingUrl = `http://${HOST}:${ceilingPort}`;
  await waitForHealth(ceilingChild, ceilingUrl);
  const quiet = async () => {
    const { waitedMs, quiet: ok } = await waitForQuiet();
    if (!ok) log('  (the machine is busy with other processes: measuring anyway)');
    else if (waitedMs > 1_000) log(`  (waited ${(waitedMs / 1000).toFixed(1)} s for other processes to go quiet)`);
  };
  /** `again`: a re-measurement of the (already warm) ceiling: no warm-up, RECHECK_S seconds. */
  const measureCeiling = async (again = false) => {
    await quiet();
    const run = await measure({
      id: 'ceiling', title: 'ceiling (bare express)', path: '/ceiling', body: (n) => validateBodies[n % VALIDATE_POOL]!,
    }, ceilingUrl, ceilingChild.proc.pid, null, again ? 0 : WARMUP_S, again ? RECHECK_S : DURATION_S);
    const { measured } = run;
    if (measured.non2xx + measured.errors + measured.timeouts > 0) {
      throw new Error(`the ceiling app answered ${measured.non2xx} non-2xx, ${measured.errors} errors, ${measured.timeouts} timeouts`);
    }
    measured.cpuRatio = 1;
    return run;
  };
  log('measuring the ceiling (bare express, JSON in/out) ...');
  const ceilingRun = await measureCeiling();
  const ceiling = ceilingRun.measured;
  windows.ceiling = { ...ceilingRun.window, requests: ceiling.total };
  const ceilings: Measured[] = [ceiling];

  // The service, on a fresh data dir.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-bench-'));
  if (KEEP_DATA) log(`DATA_DIR ${dataDir} (kept)`);
  else tempDirs.push(dataDir);
  const port = await freePort();
  const service = startChild('service', SERVICE_ROOT, 'src/main.ts', {
    PORT: String(port), HOST, DATA_DIR: dataDir, VOUCHER_API_KEYS: API_KEY, LOG_LEVEL: 'warn',
    // One key makes thousands of requests a second here: with the limits on, the scenarios
    // would measure the limiter's 429s instead of the service. RATE_LIMITS=off removes the
    // limiter (and its headers) altogether.
    RATE_LIMITS: 'off',
  }, cpuProf('service'));
  const baseUrl = `http://${HOST}:${port}`;
  await waitForHealth(service, baseUrl);

  const scenarios = SCENARIOS.filter((s) => !ONLY || ONLY.includes(s.id));
  if (scenarios.length === 0 && !ONLY?.includes(ANALYTICS_SCENARIO_ID)) throw new Error(`--only matches no scenario (ids: ${[...SCENARIOS.map((s) => s.id), ANALYTICS_SCENARIO_ID].join(', ')})`);
  const pools = new Set(scenarios.map((s) => s.pool));
  const count = (pools.has('validate') ? VALIDATE_POOL : 0) + (pools.has('spread') ? SPREAD_POOL : 0) + (pools.has('hot') ? 1 : 0);
  log(`creating ${count} vouchers through the API (not timed) ...`);
  const setupStarted = Date.now();
  const { hotId } = await createVouchers(baseUrl, pools);
  log(`  done in ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);

  const rows: Measured[] = [ceiling];
  const warmups: Record<string, { ok2xx: number; failures: number }> = {};
  for (const scenario of scenarios) {
    // One request first: a scenario that cannot succeed is a broken bench, not a slow service.
    const probe = await api(baseUrl, 'POST', scenario.path, JSON.parse(scenario.body(1_000_000_000)));
    if (probe.status >= 300) throw new Error(`${scenario.id}: probe request got ${probe.status} ${JSON.stringify(probe.body)}`);
    let adjacent = ceiling;
    if (!CEILING_ONCE) {
      log('measuring the ceiling again ...');
      adjacent = (await measureCeiling(true)).measured;
      ceilings.push(adjacent);
    }
    log(`measuring ${scenario.title} ...`);
    if (CEILING_ONCE) await quiet();
    const { measured, window, warmup2xx, warmupNon2xx } = await measure(scenario, baseUrl, service.proc.pid, adjacent);
    windows[scenario.id] = { ...window, requests: measured.total };
    rows.push(measured);
    warmups[scenario.id] = { ok2xx: warmup2xx, failures: warmupNon2xx };
  }
  // The analytics read on its own seeded DATA_DIR (scripts/bench/analytics.ts).
  if (!ONLY || ONLY.includes(ANALYTICS_SCENARIO_ID)) {
    rows.push(await benchAnalytics({
      serviceRoot: SERVICE_ROOT, apiKey: API_KEY, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S, keepData: KEEP_DATA, tempDirs,
      log, freePort, startChild, waitForHealth, stopChild, ceilingReqPerSec: async () => (CEILING_ONCE ? ceiling : (await measureCeiling()).measured).reqPerSec,
    }));
  }

  // Sanity: every 2xx apply on the hot voucher is counted on it (probe + warm-up + measured).
  // autocannon stops with up to `connections` requests in flight per run (warm-up and measured):
  // the server completes them but they are not counted, so the count may exceed by that much.
  let hotCheck: { counted_2xx: number; max_uncounted: number; usage_count: number; ok: boolean } | undefined;
  const hotRow = rows.find((r) => r.id === 'apply-hot');
  if (hotRow && hotId) {
    const hot = await api(baseUrl, 'GET', `/v1/vouchers/${hotId}`);
    const counted = 1 + warmups['apply-hot']!.ok2xx + hotRow.ok2xx;
    const usage = Number(hot.body?.usage_count);
    hotCheck = { counted_2xx: counted, max_uncounted: 2 * CONNECTIONS, usage_count: usage, ok: usage >= counted && usage <= counted + 2 * CONNECTIONS };
  }

  await Promise.all([stopChild(service), stopChild(ceilingChild)]);
  printTable(rows);
  if (ceilings.length > 1) {
    const values = ceilings.map((c) => c.reqPerSec);
    log(`\nceiling runs: ${values.map((v) => fmt(v)).join(', ')} req/s (spread ${fmt(Math.min(...values))}–${fmt(Math.max(...values))});`
      + ' each ratio uses the run right before its scenario');
  }
  const misses = rows.filter((r) => r.verdict === 'MISS');
  log(misses.length === 0 ? '\nall targets met' : `\n${misses.length} target(s) missed: ${misses.map((m) => m.id).join(', ')}`);
  if (hotCheck && !hotCheck.ok) {
    log(`WARNING: hot voucher usage_count ${hotCheck.usage_count}, expected ${hotCheck.counted_2xx} to ${hotCheck.counted_2xx + hotCheck.max_uncounted}`);
  }
  const maxLoadGen = Math.max(...rows.map((r) => r.loadGenCpu));
  if (maxLoadGen > 0.9) log(`note: the load generator used up to ${Math.round(maxLoadGen * 100)}% of a core: the ceiling may be load-generator bound`);
  const maxOther = Math.max(...rows.map((r) => r.otherCpu ?? 0));
  if (maxOther > 0.2) {
    log(`note: other processes used up to ${Math.round(maxOther * 100)}% of a core during a run: the req/s ratios are noisy;`
      + ' the CPU ratio (server CPU per request, ceiling over scenario) is the steadier figure');
  }

  const profiles: Record<string, ProfileSummary> = {};
  if (PROFILE) {
    const profileOf = (name: string) => {
      const file = fs.readdirSync(path.join(profDir, name)).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error(`no CPU profile was written by the ${name} child`);
      return loadProfile(path.join(profDir, name, file));
    };
    const ceilingProfile = profileOf('ceiling');
    const serviceProfile = profileOf('service');
    log(`\nCPU profiles (measured seconds only; profiling slows the servers down): ${path.relative(ROOT, profDir)}/`);
    for (const [id, { requests, ...window }] of Object.entries(windows)) {
      profiles[id] = summariseProfile(id === 'ceiling' ? ceilingProfile : serviceProfile, id === 'ceiling' ? ROOT : SERVICE_ROOT, window, requests);
    }
    for (const id of Object.keys(windows)) {
      log(`\n${id}:`);
      for (const line of formatSummary(profiles[id]!, id === 'ceiling' ? undefined : profiles.ceiling)) log(line);
    }
  }

  const out = path.join(ROOT, '.bench', 'last.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify({
    at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
    service_root: SERVICE_ROOT,
    settings: { connections: CONNECTIONS, pipelining: 1, warmup_s: WARMUP_S, duration_s: DURATION_S, ceiling_recheck_s: CEILING_ONCE ? null : RECHECK_S, rate_limits: RATE_LIMITS },
    ceiling_req_per_sec: ceiling.reqPerSec,
    results: rows,
    ceiling_runs: ceilings,
    warmups,
    hot_voucher_check: hotCheck,
    profiles: PROFILE ? profiles : undefined,
  }, null, 2)}\n`);
  log(`results written to ${path.relative(ROOT, out)}`);
};

let exiting = false;
const abort = async (error: unknown) => {
  if (exiting) return;
  exiting = true;
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  await cleanUp().catch(() => undefined);
  process.exit(1);
};
process.on('SIGINT', () => void abort(new Error('interrupted')));
process.on('uncaughtException', (error) => void abort(error));
process.on('unhandledRejection', (error) => void abort(error));
process.on('SIGTERM', () => void abort(new Error('terminated')));

main().then(async () => {
  await cleanUp();
  process.exit(0);
}, abort);
