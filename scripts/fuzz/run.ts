/**
 * The fuzzer's core, shared by `npm run fuzz` (scripts/fuzz.ts) and the CI test
 * (test/fuzz/fuzz.test.ts): start the service, seed it, measure a control request, send
 * generated requests (requests.ts) with `concurrency` in flight until the budget or the duration
 * is spent while slow sockets (sockets.ts) wait to be closed, then examine every answer. It never
 * throws for what the service does: that is in the report's findings.
 */
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { operations } from './operations.ts';
import { judge, summarise, truncate, type Finding } from './judge.ts';
export type { Finding, FindingKind } from './judge.ts';
import { generate, type FuzzRequest, type GenerateContext } from './requests.ts';
import { sendHttp, sendRaw, type Outcome } from './send.ts';
import { rssOf, seedService, startService, stopService, type ServerTimeouts, type Service } from './service.ts';
import { probeSocket, SOCKET_KINDS, type SocketProbe } from './sockets.ts';

export interface FuzzOptions {
  seed: number;
  /** Seconds of generated requests (the run ends earlier when the budget is spent). */
  durationS: number;
  /** Most generated requests; Infinity: as many as the duration allows. */
  budget: number;
  concurrency: number;
  /** Tag prefixes left out of the generated requests and socket kinds (`odd-date/leap-second`, `socket`). */
  without: string[];
  /** Slow sockets opened at the start. */
  sockets: number;
  /** How long a slow socket may stay open before it is a finding. */
  socketDeadlineMs: number;
  /** How long a request may go unanswered before it is a finding. */
  requestTimeoutMs: number;
  /** A control request (production GET /v1/vouchers) every this many ms. */
  controlIntervalMs: number;
  /** RSS growth of the service (MB, after the run minus before) beyond which the run fails. */
  maxRssGrowthMb: number;
  /** Server timeouts given to the service (service.ts SHORT_TIMEOUTS), or 'default': its own. */
  timeouts: ServerTimeouts | 'default';
  /** The checkout the service runs from. */
  root: string;
  keepData: boolean;
  /** Only these request indices, one at a time (a replay); every answer is printed. */
  replay?: number[];
  /** Progress lines. */
  log: (line: string) => void;
  /** Called once the service child exists (the CLI stops it on SIGINT). */
  onService?: (service: Service) => void;
}

export interface Stats {
  count: number;
  byStatus: Record<string, number>;
}

export interface FuzzReport {
  seed: number;
  without: string[];
  sent: number;
  answered: number;
  durationMs: number;
  byStatus: Record<string, number>;
  byTag: Record<string, Stats>;
  byTarget: Record<string, Stats>;
  findings: Finding[];
  sockets: SocketProbe[];
  /** Bytes of RSS of the service child: after seeding, highest seen during the run, after it. */
  memory: { before?: number; peak?: number; after?: number };
  /** Control request latency (ms): median before the run, and during it. */
  control: { baselineMs: number; samples: number[]; failures: number };
  crashed: boolean;
}

/** Whether a tag survives `--without` (a prefix leaves out the tag and its variants). */
export const allowedBy =
  (without: string[]) =>
  (tag: string): boolean =>
    !without.some((prefix) => tag === prefix || tag.startsWith(`${prefix}/`));

const median = (values: number[]): number => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

export const percentile = (values: number[], p: number): number => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The service's error log lines that name `requestId` (pino JSON: message, error message, first stack lines). */
const logLinesFor = (service: Service, requestId: string | undefined): string[] => {
  if (!requestId) return [];
  return service.proc
    .output()
    .split('\n')
    .filter((line) => line.includes(requestId))
    .map((line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; err?: { message?: string; stack?: string } };
        const stack = entry.err?.stack?.split('\n').slice(0, 4).join(' | ');
        return truncate(`${entry.msg ?? ''}: ${stack ?? entry.err?.message ?? ''}`, 600);
      } catch {
        return truncate(line, 600);
      }
    })
    .slice(0, 3);
};

/** Sends one control request on a connection of its own (a new one each time); resolves with its ms, or undefined when it failed. */
const controlRequest = (service: Service, agent: http.Agent, timeoutMs: number): Promise<Outcome> =>
  sendHttp(
    {
      index: -1,
      target: 'control',
      method: 'GET',
      path: '/v1/vouchers?limit=10',
      headers: { Authorization: `Bearer ${service.keys.production}` },
      tags: [],
    },
    { host: service.host, port: service.port },
    agent,
    timeoutMs,
  );

/** Runs the fuzzer against a fresh service and stops it again; the report says what was found. */
export const fuzz = async (options: FuzzOptions): Promise<FuzzReport> => {
  const allowed = allowedBy(options.without);
  const service = await startService({ root: options.root, timeouts: options.timeouts, keepData: options.keepData });
  options.onService?.(service);
  const report: FuzzReport = {
    seed: options.seed,
    without: options.without,
    sent: 0,
    answered: 0,
    durationMs: 0,
    byStatus: {},
    byTag: {},
    byTarget: {},
    findings: [],
    sockets: [],
    memory: {},
    control: { baselineMs: NaN, samples: [], failures: 0 },
    crashed: false,
  };
  let stopping = false;
  const inFlight = new Map<number, FuzzRequest>();
  void service.proc.exited.then(({ code, signal }) => {
    if (stopping) return;
    report.crashed = true;
    report.findings.push({
      kind: 'crash',
      message: `the service exited (code ${code}, signal ${signal}) while requests ${[...inFlight.keys()].join(', ') || '(none)'} were in flight`,
      log: service.proc.output().split('\n').slice(-30),
      request: [...inFlight.values()].map(summarise)[0],
    });
  });
  // A new connection per control request: a kept-alive one idles between samples, and on a loaded
  // machine the wait can pass the service's keep-alive timeout (1 s in the CI run), so the client
  // would write on a socket the service is closing (ECONNRESET), a race of the client's, not a finding.
  const controlAgent = new http.Agent({ keepAlive: false, maxSockets: 1 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const stopSockets = new AbortController();
  setMaxListeners(options.sockets + 10, stopSockets.signal);
  try {
    options.log(`service on ${service.baseUrl} (pid ${service.proc.child.pid}), DATA_DIR ${service.dataDir}`);
    await seedService(service);

    // the control request's latency before any fuzzing: its median over 20, after 10 to warm up
    const baseline: number[] = [];
    for (let i = 0; i < 30; i += 1) {
      const outcome = await controlRequest(service, controlAgent, options.requestTimeoutMs);
      if (outcome.status !== 200)
        throw new Error(
          `control request failed before the run: ${outcome.status ?? outcome.error} ${outcome.body.slice(0, 300)}`,
        );
      if (i >= 10) baseline.push(outcome.ms);
    }
    report.control.baselineMs = median(baseline);
    report.memory.before = rssOf(service.proc.child.pid);
    report.memory.peak = report.memory.before;

    const ctx: GenerateContext = {
      seed: options.seed,
      operations: operations(),
      refs: service.refs,
      keys: service.keys,
      allowed,
    };
    const target = { host: service.host, port: service.port };
    const started = performance.now();
    const deadline = started + options.durationS * 1000;

    const examine = (request: FuzzRequest, outcome: Outcome) => {
      const statusKey = outcome.status === undefined ? `none (${outcome.error})` : String(outcome.status);
      report.byStatus[statusKey] = (report.byStatus[statusKey] ?? 0) + 1;
      const count = (table: Record<string, Stats>, key: string) => {
        const stats = (table[key] ??= { count: 0, byStatus: {} });
        stats.count += 1;
        stats.byStatus[statusKey] = (stats.byStatus[statusKey] ?? 0) + 1;
      };
      count(report.byTarget, request.target);
      for (const tag of new Set(request.tags.length > 0 ? request.tags : ['valid'])) count(report.byTag, tag);
      if (outcome.status !== undefined) report.answered += 1;
      // without an answer after a crash or while stopping, the crash (or nothing) is the finding
      if (outcome.status === undefined && (stopping || report.crashed)) return;
      report.findings.push(...judge(request, outcome, options.requestTimeoutMs));
    };

    const send = (request: FuzzRequest) =>
      request.raw
        ? sendRaw(request, target, options.requestTimeoutMs)
        : sendHttp(request, target, agent, options.requestTimeoutMs);

    if (options.replay) {
      for (const index of options.replay) {
        const request = generate(index, ctx);
        const outcome = await send(request);
        report.sent += 1;
        examine(request, outcome);
        options.log(
          `#${index} ${JSON.stringify(summarise(request), null, 2)}\n→ ${outcome.status ?? outcome.error} (${Math.round(outcome.ms)} ms, ${outcome.bytes} bytes)\n${truncate(outcome.body, 4_000)}`,
        );
      }
    } else {
      // slow sockets, opened at the start (staggered), closed by the server or at their deadline
      const kinds = SOCKET_KINDS.filter(allowed);
      const probes =
        kinds.length === 0
          ? []
          : Array.from({ length: options.sockets }, (_, i) =>
              sleep(i * 50).then(() =>
                probeSocket(
                  kinds[i % kinds.length]!,
                  target,
                  service.keys.sandbox,
                  options.socketDeadlineMs,
                  stopSockets.signal,
                ),
              ),
            );

      // the control request, and the service's memory, sampled while the run lasts
      let running = true;
      const control = (async () => {
        while (running && !report.crashed) {
          await sleep(options.controlIntervalMs);
          const outcome = await controlRequest(service, controlAgent, options.requestTimeoutMs);
          const rss = rssOf(service.proc.child.pid);
          if (rss !== undefined) report.memory.peak = Math.max(report.memory.peak ?? 0, rss);
          if (outcome.status === 200) report.control.samples.push(outcome.ms);
          else if (!report.crashed) {
            report.control.failures += 1;
            report.findings.push({
              kind: 'control',
              message: `the control request GET /v1/vouchers answered ${outcome.status ?? outcome.error} during the run`,
              status: outcome.status,
              answer: truncate(outcome.error ?? outcome.body, 500),
            });
          }
        }
      })();

      let next = 0;
      let lastProgress = started;
      const worker = async () => {
        while (!report.crashed && next < options.budget && performance.now() < deadline) {
          const index = next++;
          const request = generate(index, ctx);
          inFlight.set(index, request);
          const outcome = await send(request);
          inFlight.delete(index);
          report.sent += 1;
          examine(request, outcome);
          if (performance.now() - lastProgress > 5_000) {
            lastProgress = performance.now();
            const recent = report.control.samples.slice(-10);
            options.log(
              `${Math.round((lastProgress - started) / 1000)} s: ${report.sent} sent, ${report.findings.length} findings, control ${median(recent).toFixed(1)} ms, RSS ${((rssOf(service.proc.child.pid) ?? 0) / 2 ** 20).toFixed(0)} MB`,
            );
          }
        }
      };
      await Promise.all(Array.from({ length: options.concurrency }, worker));
      report.durationMs = performance.now() - started;
      if (probes.length > 0 && !report.crashed)
        options.log(
          `waiting for ${probes.length} slow sockets to be closed (at most ${options.socketDeadlineMs / 1000} s each)`,
        );
      report.sockets = await Promise.all(probes);
      running = false;
      await control;
      for (const probe of report.sockets)
        if (probe.closedAfterMs === undefined && !report.crashed)
          report.findings.push({
            kind: 'not-closed',
            message: `a ${probe.kind} connection was still open after ${options.socketDeadlineMs} ms${probe.firstLine ? ` (it had received "${probe.firstLine}")` : ''}${probe.error ? ` (${probe.error})` : ''}`,
          });
    }

    // the service logs an unhandled error after answering: its lines are looked up once it has had time
    if (report.findings.some((f) => f.requestId)) await sleep(500);
    for (const finding of report.findings) if (finding.requestId) finding.log = logLinesFor(service, finding.requestId);

    if (!report.crashed) {
      // after a pause, the service must still answer, and its memory is measured again
      await sleep(1_000);
      const after = await controlRequest(service, controlAgent, options.requestTimeoutMs);
      if (after.status !== 200)
        report.findings.push({
          kind: 'control',
          message: `the control request answered ${after.status ?? after.error} after the run`,
          answer: truncate(after.error ?? after.body, 500),
        });
      report.memory.after = rssOf(service.proc.child.pid);
      const growth = (report.memory.after ?? 0) - (report.memory.before ?? 0);
      if (report.memory.before !== undefined && growth > options.maxRssGrowthMb * 2 ** 20)
        report.findings.push({
          kind: 'memory',
          message: `the service's RSS grew by ${(growth / 2 ** 20).toFixed(0)} MB during the run (more than ${options.maxRssGrowthMb} MB)`,
        });
    }
    return report;
  } finally {
    stopping = true;
    stopSockets.abort();
    agent.destroy();
    controlAgent.destroy();
    await stopService(service);
  }
};
