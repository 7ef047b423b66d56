/** The load: autocannon runs against one scenario (a warm-up run, then the measured one), and their figures. */
import autocannon from 'autocannon';
import { CONNECTIONS, DURATION_S, WARMUP_S } from './cli.ts';
import { startCpuMeter } from './cpu.ts';
import { HEADERS, type Scenario } from './scenarios.ts';

export interface Measured {
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
  /** Server CPU milliseconds per completed request of each of its threads, by name (scripts/bench/cpu.ts threadCpuSeconds). */
  threadCpuMsPerReq: Record<string, number> | null;
  /** Ceiling's CPU per request over this scenario's: the ratio with CPU contention taken out. */
  cpuRatio: number | null;
  /** With several rounds: each round's ratio (the row's ratio is their median). */
  rounds?: number[];
  /** With several closed-loop passes (an open-loop A/B run): each pass's req/s; the figures are their means. */
  passes?: number[];
  /** The tuned ceiling's req/s (scripts/bench/ceiling.ts) measured right before, and the ratio to it (no target). */
  tunedReqPerSec?: number | null;
  tunedRatio?: number | null;
  tunedRounds?: number[];
}

/** The median of some figures (the mean of the middle two for an even count). */
export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** What mainThreadCpu reads of a meter (startCpuMeter's result). */
export interface ThreadMeter {
  window: { fromUs: number; toUs: number };
  serverThreadCpuSeconds: Record<string, number> | null;
  /** Of those, the seconds in the kernel (absent: not read). */
  serverThreadKernelSeconds?: Record<string, number> | null;
}

/**
 * The server's main thread over several measured runs (medians of the runs): its share of a core,
 * and its CPU per answered request in µs (`answered[i]`: the requests run i answered). Nulls when
 * the thread's CPU is not known (off Linux).
 */
export const mainThreadCpu = (
  meters: ThreadMeter[],
  answered: number[],
): { mainCpu: number | null; mainCpuUsPerRequest: number | null } => {
  const shares: number[] = [];
  const perRequest: number[] = [];
  meters.forEach((m, i) => {
    const main = m.serverThreadCpuSeconds?.main;
    if (main === undefined) return;
    shares.push(main / ((m.window.toUs - m.window.fromUs) / 1e6));
    if (answered[i]! > 0) perRequest.push((main * 1e6) / answered[i]!);
  });
  return {
    mainCpu: shares.length > 0 ? median(shares) : null,
    mainCpuUsPerRequest: perRequest.length > 0 ? median(perRequest) : null,
  };
};

/**
 * Each of the server's threads' CPU per answered request in µs, by thread name, over all the runs
 * (their CPU seconds summed over their answers summed); null when no run has thread figures or
 * none answered. Where a request's time goes across the service's threads at an offered rate.
 * `kernel`: only the part of it in the kernel.
 */
export const threadCpuPerRequest = (
  meters: ThreadMeter[],
  answered: number[],
  figure: 'cpu' | 'kernel' = 'cpu',
): Record<string, number> | null => {
  const seconds = new Map<string, number>();
  let requests = 0;
  meters.forEach((m, i) => {
    const byName = figure === 'cpu' ? m.serverThreadCpuSeconds : m.serverThreadKernelSeconds;
    if (!byName) return;
    requests += answered[i]!;
    for (const [name, s] of Object.entries(byName)) seconds.set(name, (seconds.get(name) ?? 0) + s);
  });
  if (seconds.size === 0 || requests === 0) return null;
  return Object.fromEntries([...seconds].map(([name, s]) => [name, (s * 1e6) / requests]));
};

/**
 * How many bodies each scenario has used: the numbering goes on across its runs (warm-up and
 * rounds), so that no two requests of a scenario repeat an order id (a repeat would be answered
 * as an idempotent replay, which writes nothing).
 */
const used = new WeakMap<(n: number) => string, number>();

/** The next body of a scenario, in the numbering its autocannon runs share. */
export const takeBody = (body: (n: number) => string): string => {
  const n = used.get(body) ?? 0;
  used.set(body, n + 1);
  return body(n);
};

/** One autocannon run (a warm-up run, then the measured one) with a distinct body per request. */
const load = async (
  url: string,
  body: (n: number) => string,
  serverPid: number | undefined,
  warmupS = WARMUP_S,
  durationS = DURATION_S,
) => {
  // Requests are built per call so each one can differ (distinct order ids).
  const setupRequest = (req: { body?: string | Buffer }) => {
    req.body = takeBody(body);
    return req;
  };
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
  const stopCpuMeter = startCpuMeter(serverPid);
  const result = await autocannon({ ...common, duration: durationS });
  return { result, warmup2xx: warm['2xx'], warmupNon2xx: warm.non2xx + warm.errors, ...stopCpuMeter() };
};

const verdictOf = (
  scenario: Pick<Scenario, 'target'>,
  ceiling: Measured | null,
  ratio: number | null,
  failures: number,
): Measured['verdict'] => {
  if (ceiling === null) return 'BASE';
  if (scenario.target === undefined) return 'INFO';
  return ratio! >= scenario.target.ratio && failures === 0 ? 'PASS' : 'MISS';
};

/** Loads one scenario; its ratios are taken against `ceiling` (null: this is the ceiling). */
export const measure = async (
  scenario: Pick<Scenario, 'id' | 'title' | 'path' | 'target' | 'body'>,
  baseUrl: string,
  pid: number | undefined,
  ceiling: Measured | null,
  warmupS = WARMUP_S,
  durationS = DURATION_S,
) => {
  const {
    result,
    window,
    loadGenCpu,
    serverCpu,
    serverCpuSeconds,
    serverThreadCpuSeconds,
    otherCpu,
    warmup2xx,
    warmupNon2xx,
  } = await load(`${baseUrl}${scenario.path}`, scenario.body, pid, warmupS, durationS);
  const reqPerSec = result.requests.mean;
  const ratio = ceiling ? reqPerSec / ceiling.reqPerSec : null;
  const completed = result['2xx'] + result.non2xx;
  const serverCpuMsPerReq = serverCpuSeconds !== null && completed > 0 ? (serverCpuSeconds * 1000) / completed : null;
  const threadCpuMsPerReq =
    serverThreadCpuSeconds && completed > 0
      ? Object.fromEntries(Object.entries(serverThreadCpuSeconds).map(([name, s]) => [name, (s * 1000) / completed]))
      : null;
  const cpuRatio =
    ceiling?.serverCpuMsPerReq && serverCpuMsPerReq ? ceiling.serverCpuMsPerReq / serverCpuMsPerReq : null;
  const verdict = verdictOf(scenario, ceiling, ratio, result.non2xx + result.errors + result.timeouts);
  const measured: Measured = {
    id: scenario.id,
    title: scenario.title,
    reqPerSec,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    ceilingReqPerSec: ceiling?.reqPerSec ?? null,
    ratio,
    target: scenario.target?.ratio ?? null,
    verdict,
    serverCpu,
    loadGenCpu,
    otherCpu,
    serverCpuMsPerReq,
    threadCpuMsPerReq,
    cpuRatio,
  };
  return { measured, window, warmup2xx, warmupNon2xx };
};
