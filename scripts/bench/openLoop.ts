/**
 * The open-loop load generator (docs/decisions/030-open-loop-generator.md): requests are sent at a
 * constant arrival rate whatever the answers, and each request's latency is taken from the time it
 * was SCHEDULED, not from the time it was sent. A client that falls behind (its event loop
 * stalled, or every connection busy) therefore shows its lag in the latencies instead of hiding it
 * (coordinated omission corrected).
 *
 * `OpenLoop` is the arithmetic (schedule, dispatch, latencies, percentiles), driven by an injected
 * clock and transport so that it can be tested with a fake clock; `runOpenLoop` drives it for real
 * with the monotonic clock, timers and `node:http` with a keep-alive agent that the caller may keep
 * across runs.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { DEFAULT_SERVER_LIMITS } from '../../src/http/server.ts';

/** How a request ended: its HTTP status, or a connection error or timeout. */
export type Outcome = { status: number } | { error: 'error' | 'timeout' };

/** Sends request `n`; calls `done` once when it is answered (or failed). */
export type Send = (n: number, done: (outcome: Outcome) => void) => void;

export interface OpenLoopOptions {
  /** Requests per second offered. */
  rate: number;
  /** Requests to send in all (the run lasts count / rate seconds). */
  count: number;
  /** At most this many requests in flight (one connection each); more due requests wait for one. */
  maxInFlight: number;
  /** Monotonic milliseconds (fractional). */
  now: () => number;
  send: Send;
  /**
   * The first this many requests are a lead-in: sent on the same schedule, but their latencies are
   * kept apart from the result (`leadIn()`), as wrk2 leaves its calibration period out (default 0).
   */
  unmeasured?: number;
}

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface OpenLoopResult {
  rate: number;
  sent: number;
  answered: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Latency from each request's scheduled time to its answer, ms (answered requests, any status). */
  latency: Percentiles;
  /** How late each request was sent after its scheduled time, ms: the generator's own lag. */
  sendLag: Percentiles;
  /** Most requests in flight at once (= connections the pool needed). */
  peakInFlight: number;
  /** Connections the run opened (null where there are none: a fake transport). */
  opened: number | null;
  maxInFlight: number;
  /** Due requests had to wait because maxInFlight requests were in flight: the generator was the bottleneck. */
  capHit: boolean;
  /** From the first scheduled time to the last answer, ms. */
  elapsedMs: number;
}

/**
 * The value at percentile `p` (0 < p ≤ 100) of `sorted` (ascending), by nearest rank: the
 * smallest value with at least p % of the values at or below it. NaN for no values.
 */
export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN;
  // (the epsilon keeps 99.9 % of 1,000 at rank 999: in floating point it is 999.0000000000001)
  const rank = Math.ceil((p * sorted.length) / 100 - 1e-9);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
};

export const percentilesOf = (values: ArrayLike<number>): Percentiles => {
  const sorted = Float64Array.from(values).sort();
  return {
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: percentile(sorted, 100),
  };
};

/**
 * Request i is scheduled at start + i / rate. Each `tick()` sends every request whose scheduled
 * time has passed (as many as free slots allow), so a late tick sends a burst of the requests it
 * owes instead of dropping or re-spacing them.
 */
export class OpenLoop {
  private readonly intervalMs: number;
  private startMs = Number.NaN;
  private next = 0;
  private inFlight = 0;
  private answered = 0;
  private readonly latencies: Float64Array;
  private readonly lags: Float64Array;
  private readonly statuses: Int16Array;
  private peakInFlight = 0;
  private capHit = false;
  private onFinished: (() => void) | undefined;

  constructor(private readonly options: OpenLoopOptions) {
    if (!(options.rate > 0)) throw new Error(`open-loop rate must be positive, got ${options.rate}`);
    this.intervalMs = 1000 / options.rate;
    this.latencies = new Float64Array(options.count);
    this.lags = new Float64Array(options.count);
    // 0: not answered; an HTTP status; -1: connection error; -2: timeout
    this.statuses = new Int16Array(options.count);
  }

  /** Starts the schedule now (request 0 is due at once). */
  start(): void {
    this.startMs = this.options.now();
  }

  scheduledAt(i: number): number {
    return this.startMs + i * this.intervalMs;
  }

  /** When the next unsent request is due (Infinity when all are sent). */
  nextDueAt(): number {
    return this.next < this.options.count ? this.scheduledAt(this.next) : Number.POSITIVE_INFINITY;
  }

  get finished(): boolean {
    return this.answered === this.options.count;
  }

  /** Resolves when every request is answered. */
  whenFinished(): Promise<void> {
    if (this.finished) return Promise.resolve();
    return new Promise((resolve) => {
      this.onFinished = resolve;
    });
  }

  /** Sends every request that is due and has a free slot. */
  tick(): void {
    const { count, maxInFlight, now, send } = this.options;
    let t = now();
    while (this.next < count && this.scheduledAt(this.next) <= t) {
      if (this.inFlight >= maxInFlight) {
        this.capHit = true;
        return;
      }
      const i = this.next;
      this.next += 1;
      const scheduled = this.scheduledAt(i);
      this.lags[i] = t - scheduled;
      this.inFlight += 1;
      if (this.inFlight > this.peakInFlight) this.peakInFlight = this.inFlight;
      let settled = false;
      send(i, (outcome) => {
        if (settled) return;
        settled = true;
        const at = now();
        this.latencies[i] = at - scheduled;
        this.statuses[i] = 'status' in outcome ? outcome.status : outcome.error === 'error' ? -1 : -2;
        this.inFlight -= 1;
        this.answered += 1;
        if (this.finished) this.onFinished?.();
      });
      t = now();
    }
  }

  /** The first measured request: the lead-in's requests come before it. */
  private get measuredFrom(): number {
    return Math.min(this.options.unmeasured ?? 0, this.options.count);
  }

  /** The latencies of the answered measured requests and the send lag of every sent one, ms. */
  samples(): Samples {
    return this.samplesOf(this.measuredFrom, this.next);
  }

  /** The measured requests' result: the lead-in's are left out (see `leadIn`). */
  result(): OpenLoopResult {
    return this.resultOf(this.measuredFrom, this.next);
  }

  /** The lead-in's requests alone, as a run of their own (null without a lead-in). */
  leadIn(): Omit<OpenLoopRun, 'leadIn'> | null {
    const to = Math.min(this.measuredFrom, this.next);
    return to === 0 ? null : { result: this.resultOf(0, to), samples: this.samplesOf(0, to) };
  }

  private samplesOf(from: number, to: number): Samples {
    const latencies: number[] = [];
    for (let i = from; i < to; i += 1) if (this.statuses[i] !== 0) latencies.push(this.latencies[i]!);
    return { latencies: Float64Array.from(latencies), lags: this.lags.slice(from, Math.max(from, to)) };
  }

  /**
   * Requests [from, to) summed up. The pool's peak and whether it was ever full are the whole
   * run's, lead-in included: a full pool makes every later latency a lower bound.
   */
  private resultOf(from: number, to: number): OpenLoopResult {
    const answered: number[] = [];
    let ok2xx = 0;
    let non2xx = 0;
    let errors = 0;
    let timeouts = 0;
    let lastAnswerMs = Number.NaN;
    for (let i = from; i < to; i += 1) {
      const s = this.statuses[i]!;
      if (s === 0) continue;
      answered.push(this.latencies[i]!);
      const at = this.scheduledAt(i) + this.latencies[i]!;
      if (Number.isNaN(lastAnswerMs) || at > lastAnswerMs) lastAnswerMs = at;
      if (s === -1) errors += 1;
      else if (s === -2) timeouts += 1;
      else if (s >= 200 && s < 300) ok2xx += 1;
      else non2xx += 1;
    }
    return {
      rate: this.options.rate,
      sent: Math.max(0, to - from),
      answered: answered.length,
      ok2xx,
      non2xx,
      errors,
      timeouts,
      latency: percentilesOf(answered),
      sendLag: percentilesOf(this.lags.subarray(from, Math.max(from, to))),
      peakInFlight: this.peakInFlight,
      opened: null,
      maxInFlight: this.options.maxInFlight,
      capHit: this.capHit,
      elapsedMs: lastAnswerMs - this.scheduledAt(from),
    };
  }
}

export interface Samples {
  latencies: Float64Array;
  lags: Float64Array;
}

/** One run's result and its raw samples (to pool several runs' percentiles: see mergeRuns). */
export interface OpenLoopRun {
  result: OpenLoopResult;
  samples: Samples;
  /** The lead-in's requests, kept out of `result` (null or absent without a lead-in). */
  leadIn?: Omit<OpenLoopRun, 'leadIn'> | null;
}

const concat = (arrays: Float64Array[]): Float64Array => {
  const out = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
};

/**
 * Several runs at the same rate as one: counts add up, percentiles are those of the pooled
 * samples (not an average of each run's percentiles), the peak and the cap are the worst run's.
 */
export const mergeRuns = (runs: OpenLoopRun[]): OpenLoopResult => {
  if (runs.length === 0) throw new Error('no open-loop runs to merge');
  const sum = (f: (r: OpenLoopResult) => number) => runs.reduce((n, r) => n + f(r.result), 0);
  return {
    rate: runs[0]!.result.rate,
    sent: sum((r) => r.sent),
    answered: sum((r) => r.answered),
    ok2xx: sum((r) => r.ok2xx),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    latency: percentilesOf(concat(runs.map((r) => r.samples.latencies))),
    sendLag: percentilesOf(concat(runs.map((r) => r.samples.lags))),
    peakInFlight: Math.max(...runs.map((r) => r.result.peakInFlight)),
    opened: runs.some((r) => r.result.opened === null) ? null : sum((r) => r.opened!),
    maxInFlight: runs[0]!.result.maxInFlight,
    capHit: runs.some((r) => r.result.capHit),
    elapsedMs: sum((r) => r.elapsedMs),
  };
};

export interface HttpTarget {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  /** The body of request n (numbered by the caller, e.g. distinct order ids). */
  body: (n: number) => string;
}

/**
 * The generator closes a connection idle this long, 5 s before the servers it measures do (the
 * service and the bench's ceilings keep an idle one for DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs,
 * 65 s): else one could close a connection just as a request goes out on it, and that request
 * would fail.
 */
export const IDLE_CLOSE_MS = DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs - 5_000;

/**
 * `node:http` with a keep-alive agent: a request goes on a free connection, or on a new one when
 * all are busy (the pool grows with the load; OpenLoop's maxInFlight keeps it under the agent's
 * maxSockets, so the agent never queues a request itself). The connections stay open between
 * runs until `close`, or until one has been idle for IDLE_CLOSE_MS, so several runs on one
 * sender start on the connections the earlier ones opened. `opened()` counts the connections
 * opened so far.
 */
export const httpSender = (target: HttpTarget, maxSockets: number, timeoutMs = 10_000) => {
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets,
    maxFreeSockets: maxSockets,
    scheduling: 'lifo',
    timeout: IDLE_CLOSE_MS,
  });
  let opened = 0;
  // The agent opens every connection through createConnection, which its API lets a caller override.
  const connect = agent.createConnection.bind(agent);
  agent.createConnection = (...args: Parameters<typeof connect>) => {
    opened += 1;
    return connect(...args);
  };
  const url = new URL(target.url);
  const send: Send = (n, done) => {
    const body = target.body(n);
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: target.method,
        headers: { ...target.headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.on('end', () => done({ status: res.statusCode ?? 0 }));
        res.on('error', () => done({ error: 'error' }));
        res.resume();
      },
    );
    req.setTimeout(timeoutMs, () => {
      done({ error: 'timeout' });
      req.destroy();
    });
    req.on('error', () => done({ error: 'error' }));
    req.end(body);
  };
  return { send, opened: () => opened, close: () => agent.destroy() };
};
export type HttpSender = ReturnType<typeof httpSender>;

/**
 * Offers `rate` requests per second for `durationS` seconds through `sender` and waits for every
 * answer. Between answers a timer wakes the loop when the next request is due (Node's timers
 * have a resolution of 1 ms: the send lag in the result shows how late requests went out, and
 * it is part of their latency). With `leadInS`, the same rate is offered that many seconds
 * before, on one schedule, and those requests are returned apart (`leadIn`): the result is the
 * load's steady state, not its first seconds after a quiet spell. The sender's connections are
 * left open for the next run: the caller closes it.
 */
export const runOpenLoop = async (
  sender: HttpSender,
  {
    rate,
    durationS,
    maxConnections,
    leadInS = 0,
  }: { rate: number; durationS: number; maxConnections: number; leadInS?: number },
): Promise<OpenLoopRun> => {
  const openedBefore = sender.opened();
  let tickQueued = false;
  let timer: NodeJS.Timeout | undefined;
  const wake = () => {
    timer = undefined;
    loop.tick();
    arm();
  };
  const arm = () => {
    if (timer !== undefined) return;
    const due = loop.nextDueAt();
    if (due === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(wake, Math.max(0, due - performance.now()));
  };
  const unmeasured = Math.round(rate * leadInS);
  const loop = new OpenLoop({
    rate,
    count: unmeasured + Math.max(1, Math.round(rate * durationS)),
    unmeasured,
    maxInFlight: maxConnections,
    now: () => performance.now(),
    // An answer frees a slot and wakes the loop, once per turn of the event loop and after the
    // answer's connection went back to the agent's free list (else the agent opens another one).
    send: (n, done) =>
      sender.send(n, (outcome) => {
        done(outcome);
        if (tickQueued) return;
        tickQueued = true;
        setImmediate(() => {
          tickQueued = false;
          loop.tick();
        });
      }),
  });
  try {
    loop.start();
    wake();
    await loop.whenFinished();
    return {
      result: { ...loop.result(), opened: sender.opened() - openedBefore },
      samples: loop.samples(),
      leadIn: loop.leadIn(),
    };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
};
