/**
 * The webhook scenario (`--only=webhooks`): apply on the spread pool with no webhook endpoint and
 * with three endpoints subscribed to `voucher.applied` on a local receiver (a child process), in
 * alternating runs on one service, reported as a ratio (target: within 10 %, 0.9). Between runs
 * the bench waits until every delivery made so far has succeeded (the drain time is reported: it
 * tells how far deliveries fell behind). Then the time from an apply's answer to the delivery at
 * a receiver in this process: 200 sequential applies, one endpoint, median and p99.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { CONNECTIONS, DURATION_S, HOST, KEEP_DATA, PROFILE, ROOT, ROUNDS, SERVICE_ROOT, WARMUP_S } from './cli.ts';
import { threadCpuSeconds } from './cpu.ts';
import { measure, median } from './load.ts';
import { busyMsIn, formatSummary, loadProfile, summariseProfile, type ProfileWindow } from './profile.ts';
import { PROF_DIR } from './profiling.ts';
import {
  SERVICE_NODE_FLAGS,
  freePort,
  freshTempDir,
  startChild,
  startServiceProcess,
  stopChild,
  waitForHealth,
} from './processes.ts';
import { sleep } from '../lib/processes.ts';
import { SCENARIOS, serviceEnv } from './scenarios.ts';
import { api, createVouchers } from './vouchers.ts';

export const WEBHOOKS_SCENARIO_ID = 'webhooks';
const ENDPOINTS = 3;
const LATENCY_APPLIES = 200;
const DRAIN_LIMIT_MS = 300_000;

const fixed = (value: number | null, digits: number): string => (value === null ? '?' : value.toFixed(digits));

/** The body of a 200 answer; any other answer (a 429 would leave endpoints in the wrong state) ends the bench. */
const expectOk = async (answer: ReturnType<typeof api>): Promise<Record<string, unknown>> => {
  const { status, body } = await answer;
  if (status !== 200) throw new Error(`webhooks bench: the service answered ${status}: ${JSON.stringify(body)}`);
  return body as Record<string, unknown>;
};

/**
 * The webhook publishers' lag behind the log (`projector_lag{group="webhooks"}` summed over the
 * environments), or 0 when the service has no /metrics: events not yet turned into deliveries,
 * which a publisher holding its batches back (decision 075) has not written as pending yet.
 */
const publisherLag = async (baseUrl: string): Promise<number> => {
  const answer = await fetch(`${baseUrl}/metrics`);
  if (answer.status !== 200) return 0;
  const text = await answer.text();
  let lag = 0;
  for (const match of text.matchAll(/^projector_lag\{[^}]*group="webhooks"[^}]*\} (\S+)$/gm)) lag += Number(match[1]);
  return lag;
};

/**
 * Waits until the publishers have caught up with the log and no delivery of the endpoints is
 * pending; returns how long that took (ms), or null when it did not within DRAIN_LIMIT_MS.
 */
const drain = async (baseUrl: string, endpoints: string[]): Promise<number | null> => {
  const started = Date.now();
  for (;;) {
    let pending = await publisherLag(baseUrl);
    for (const id of endpoints)
      pending += (await expectOk(api(baseUrl, 'GET', `/v1/webhooks/${id}/deliveries?status=pending&limit=1`)))
        .total as number;
    if (pending === 0) return Date.now() - started;
    if (Date.now() - started > DRAIN_LIMIT_MS) return null;
    await sleep(250);
  }
};

const setStatus = async (baseUrl: string, endpoints: string[], status: 'enabled' | 'disabled') => {
  for (const id of endpoints) await expectOk(api(baseUrl, 'PATCH', `/v1/webhooks/${id}`, { status }));
};

export const benchWebhooks = async (log: (msg: string) => void): Promise<Record<string, unknown>> => {
  const apply = SCENARIOS.find((s) => s.id === 'apply-spread')!;
  const receiverPort = await freePort();
  const receiver = startChild('receiver', ROOT, 'scripts/bench/receiver.ts', { PORT: String(receiverPort), HOST });
  await waitForHealth(receiver, `http://${HOST}:${receiverPort}`);
  const dataDir = freshTempDir('voucher-bench-webhooks-', { keep: KEEP_DATA });
  if (KEEP_DATA) log(`webhooks DATA_DIR ${dataDir} (kept)`);
  const port = await freePort();
  const profDir = path.join(PROF_DIR, 'webhooks');
  if (PROFILE) {
    fs.rmSync(profDir, { recursive: true, force: true });
    fs.mkdirSync(profDir, { recursive: true });
  }
  const service = startServiceProcess(
    'service',
    SERVICE_ROOT,
    serviceEnv(port, dataDir, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', KAFKA_BROKERS: '' }),
    [...SERVICE_NODE_FLAGS, ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])],
  );
  const baseUrl = `http://${HOST}:${port}`;
  await waitForHealth(service, baseUrl);
  log('webhooks: creating the spread vouchers (not timed) ...');
  await createVouchers(baseUrl, new Set(['spread']));
  const endpoints: string[] = [];
  for (let e = 0; e < ENDPOINTS; e++) {
    const res = await api(baseUrl, 'POST', '/v1/webhooks', {
      url: `http://${HOST}:${receiverPort}/hook-${e}`,
      events: ['voucher.applied'],
    });
    if (res.status !== 201)
      throw new Error(`registering an endpoint failed: ${res.status} ${JSON.stringify(res.body)}`);
    endpoints.push(res.body.id as string);
  }
  await setStatus(baseUrl, endpoints, 'disabled');

  const roundS = Math.max(1, Math.round(DURATION_S / ROUNDS));
  log(`measuring apply without and with ${ENDPOINTS} endpoints (${ROUNDS} rounds of ${roundS} s each) ...`);
  await measure(apply, baseUrl, service.child.pid, null, WARMUP_S, 1); // warm the service up
  const rounds: Array<{
    none: number;
    three: number;
    ratio: number;
    drainMs: number | null;
    deliveries: number;
    /** The service's CPU (every thread) per apply, ms, and the CPU of every other process (the receiver included), cores. */
    cpu: {
      noneMsPerApply: number | null;
      threeMsPerApply: number | null;
      otherNone: number | null;
      otherThree: number | null;
      /** Busy cores of the whole machine (the service, the load generator and every other process), of 2 on this machine. */
      busyNone: number | null;
      busyThree: number | null;
      /** The load generator's CPU per apply, ms. */
      loadGenNoneMsPerApply: number;
      loadGenThreeMsPerApply: number;
      /** The webhook thread's CPU per apply (ms) from the start of the run with endpoints until its deliveries drained. */
      webhookMsPerApply: number | null;
      /** The service's CPU per apply (ms) of each of its threads, by name, without and with endpoints. */
      threads: { none: Record<string, number> | null; three: Record<string, number> | null };
    };
  }> = [];
  /** With --profile: the measured windows of each kind, and the requests of the last round of each. */
  const windows = { none: [] as ProfileWindow[], three: [] as ProfileWindow[], requests: { none: 0, three: 0 } };
  for (let r = 0; r < ROUNDS; r++) {
    const withoutRun = await measure(apply, baseUrl, service.child.pid, null, 0, roundS);
    const none = withoutRun.measured;
    await drain(baseUrl, endpoints); // the publisher's reading of this run's events is not left to the next one
    await setStatus(baseUrl, endpoints, 'enabled');
    const threadsBefore = threadCpuSeconds(service.child.pid);
    const withRun = await measure(apply, baseUrl, service.child.pid, null, 0, roundS);
    const three = withRun.measured;
    windows.none.push(withoutRun.window);
    windows.three.push(withRun.window);
    windows.requests.none = none.total;
    windows.requests.three = three.total;
    const drainMs = await drain(baseUrl, endpoints);
    const webhookMsPerApply = webhookThreadMs(threadsBefore, threadCpuSeconds(service.child.pid), three.ok2xx);
    const loadGenMsPerApply = (m: typeof none) => (m.loadGenCpu * 1000) / m.reqPerSec;
    const load = {
      busyNone: busyCores(none),
      busyThree: busyCores(three),
      loadGenNoneMsPerApply: loadGenMsPerApply(none),
      loadGenThreeMsPerApply: loadGenMsPerApply(three),
    };
    await setStatus(baseUrl, endpoints, 'disabled');
    rounds.push({
      none: none.reqPerSec,
      three: three.reqPerSec,
      ratio: three.reqPerSec / none.reqPerSec,
      drainMs,
      deliveries: three.ok2xx * ENDPOINTS,
      cpu: {
        noneMsPerApply: none.serverCpuMsPerReq,
        threeMsPerApply: three.serverCpuMsPerReq,
        otherNone: none.otherCpu,
        otherThree: three.otherCpu,
        ...load,
        webhookMsPerApply,
        threads: { none: none.threadCpuMsPerReq, three: three.threadCpuMsPerReq },
      },
    });
    log(
      `  round ${r + 1}: ${Math.round(none.reqPerSec)} req/s without, ${Math.round(three.reqPerSec)} with (ratio ${(three.reqPerSec / none.reqPerSec).toFixed(2)}); ${three.ok2xx * ENDPOINTS} deliveries drained ${drainMs === null ? 'not within 5 min' : `${(drainMs / 1000).toFixed(1)} s after the run`}; service CPU per apply ${fixed(none.serverCpuMsPerReq, 3)} / ${fixed(three.serverCpuMsPerReq, 3)} ms, other processes ${fixed(none.otherCpu, 2)} / ${fixed(three.otherCpu, 2)} cores; load generator per apply ${fixed(load.loadGenNoneMsPerApply, 3)} / ${fixed(load.loadGenThreeMsPerApply, 3)} ms; the machine's busy cores ${fixed(load.busyNone, 2)} / ${fixed(load.busyThree, 2)}`,
    );
    const threads = threadCpuLine(none.threadCpuMsPerReq, three.threadCpuMsPerReq);
    if (threads) log(`    CPU per apply by thread, ms without / with: ${threads}`);
    if (webhookMsPerApply !== null)
      log(
        `    the webhook thread's CPU per apply from the run's start until drained: ${webhookMsPerApply.toFixed(3)} ms`,
      );
  }

  const latencies = await deliveryLatencies(baseUrl, apply);
  const p99 = percentile99(latencies);
  const ratio = median(rounds.map((r) => r.ratio));
  log(
    `webhooks: apply with ${ENDPOINTS} endpoints at ${ratio.toFixed(2)} of apply without (target 0.90: ${ratio >= 0.9 ? 'PASS' : 'MISS'}); answer to delivery: median ${median(latencies).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${LATENCY_APPLIES} sequential applies; 1 ms polling)`,
  );
  await Promise.all([stopChild(service), stopChild(receiver)]);
  if (PROFILE) reportWebhookProfiles(profDir, windows, log);
  const kafka = process.env.KAFKA_BROKERS?.trim() ? await benchKafkaLatency(apply, log) : undefined;
  if (kafka)
    log(
      `webhooks through Kafka: answer to delivery: median ${kafka.median.toFixed(1)} ms, p99 ${kafka.p99.toFixed(1)} ms (embedded in this run: median ${median(latencies).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; ratio of medians ${(kafka.median / median(latencies)).toFixed(1)})`,
    );
  else
    log('webhooks through Kafka: not measured (KAFKA_BROKERS is not set; scripts/kafka/broker.sh start runs a broker)');
  const result = {
    connections: CONNECTIONS,
    rounds,
    ratio,
    target: 0.9,
    verdict: ratio >= 0.9 ? 'PASS' : 'MISS',
    latency_ms: { median: median(latencies), p99 },
    ...(kafka ? { kafka_latency_ms: kafka } : {}),
  };
  fs.mkdirSync(path.join(ROOT, '.bench'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, '.bench', 'webhooks.json'), `${JSON.stringify(result, null, 2)}\n`);
  return result;
};

type Scenario = (typeof SCENARIOS)[number];

/** Busy cores of the whole machine during a run: the service, the load generator and every other process. */
const busyCores = (m: { serverCpu: number | null; loadGenCpu: number; otherCpu: number | null }): number | null =>
  m.serverCpu === null || m.otherCpu === null ? null : m.serverCpu + m.loadGenCpu + m.otherCpu;

/** CPU ms per apply of the webhook threads (`wh-…`) between two readings of threadCpuSeconds. */
const webhookThreadMs = (
  before: Map<string, number> | null,
  after: Map<string, number> | null,
  applies: number,
): number | null => {
  if (!before || !after || applies === 0) return null;
  let seconds = 0;
  for (const [name, s] of after) if (name.startsWith('wh-')) seconds += s - (before.get(name) ?? 0);
  return (seconds * 1000) / applies;
};

/** `name a / b` for every thread busy for at least 0.005 ms per apply in either run, busiest first. */
const threadCpuLine = (none: Record<string, number> | null, three: Record<string, number> | null): string | null => {
  if (!none || !three) return null;
  const names = [...new Set([...Object.keys(none), ...Object.keys(three)])]
    .map((name) => ({ name, a: none[name] ?? 0, b: three[name] ?? 0 }))
    .filter((t) => Math.max(t.a, t.b) >= 0.005)
    .sort((x, y) => y.b - x.b);
  return names.map((t) => `${t.name} ${t.a.toFixed(3)} / ${t.b.toFixed(3)}`).join(', ');
};

const percentile99 = (sorted: number[]): number => sorted[Math.ceil(sorted.length * 0.99) - 1]!;

/**
 * Sequential applies, each timed from its answer to the delivery at a receiver in this process
 * (one endpoint subscribed to `voucher.applied`); sorted, in ms.
 */
const deliveryLatencies = async (baseUrl: string, apply: Scenario): Promise<number[]> => {
  const arrivals = new Map<string, number>();
  const local = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = (JSON.parse(Buffer.concat(chunks).toString()) as { data: { application: { id: string } } }).data
        .application.id;
      arrivals.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => local.listen(0, HOST, resolve));
  const localPort = (local.address() as AddressInfo).port;
  await api(baseUrl, 'POST', '/v1/webhooks', {
    url: `http://${HOST}:${localPort}/latency`,
    events: ['voucher.applied'],
  });
  const latencies: number[] = [];
  for (let i = 0; i < LATENCY_APPLIES; i++) {
    const body = JSON.parse(apply.body(2_000_000_000 + i)) as Record<string, unknown>;
    const res = await api(baseUrl, 'POST', '/v1/vouchers/apply', body);
    const answered = performance.now();
    if (res.status !== 201) throw new Error(`latency apply failed: ${res.status} ${JSON.stringify(res.body)}`);
    const id = res.body.id as string;
    const deadline = answered + 30_000;
    while (!arrivals.has(id) && performance.now() < deadline) await sleep(1);
    latencies.push((arrivals.get(id) ?? deadline) - answered);
  }
  local.close();
  return latencies.sort((a, b) => a - b);
};

/**
 * KAFKA_BROKERS set: a second service whose webhooks go through Kafka (topics of their own,
 * KAFKA_TOPIC_PREFIX), and the same sequential latency measurement on it.
 */
const benchKafkaLatency = async (
  apply: Scenario,
  log: (msg: string) => void,
): Promise<{ median: number; p99: number }> => {
  const dataDir = freshTempDir('voucher-bench-webhooks-kafka-', { keep: KEEP_DATA });
  const port = await freePort();
  const service = startServiceProcess(
    'service-kafka',
    SERVICE_ROOT,
    serviceEnv(port, dataDir, {
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      KAFKA_BROKERS: process.env.KAFKA_BROKERS!.trim(),
      KAFKA_TOPIC_PREFIX: `bench-${process.pid}-${Date.now()}`,
    }),
  );
  const baseUrl = `http://${HOST}:${port}`;
  await waitForHealth(service, baseUrl);
  log(`webhooks through Kafka (${process.env.KAFKA_BROKERS}): ${LATENCY_APPLIES} sequential applies ...`);
  await createVouchers(baseUrl, new Set(['spread']));
  const latencies = await deliveryLatencies(baseUrl, apply);
  await stopChild(service);
  return { median: median(latencies), p99: percentile99(latencies) };
};

/**
 * --profile: where the service's main thread spent its time in the last round with endpoints,
 * against the last round without (per request), and the busy time of its worker threads.
 */
const reportWebhookProfiles = (
  dir: string,
  windows: { none: ProfileWindow[]; three: ProfileWindow[]; requests: { none: number; three: number } },
  log: (msg: string) => void,
): void => {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const mainFile = files.find((f) => f.split('.').at(-3) === '0');
  if (!mainFile) {
    log(`no CPU profile was written by the service in ${dir}`);
    return;
  }
  const main = loadProfile(path.join(dir, mainFile));
  const workers = files.filter((f) => f !== mainFile).map((f) => loadProfile(path.join(dir, f)));
  const last = (list: ProfileWindow[]) => list.at(-1)!;
  const none = summariseProfile(main, SERVICE_ROOT, last(windows.none), windows.requests.none);
  const three = summariseProfile(main, SERVICE_ROOT, last(windows.three), windows.requests.three);
  log(`\nCPU profile of the service (last round; profiling slows it down): ${path.relative(ROOT, dir)}/`);
  log('\nwithout endpoints:');
  for (const line of formatSummary(none)) log(line);
  log(`\nwith ${ENDPOINTS} endpoints (compared with the round without):`);
  for (const line of formatSummary(three, none)) log(line);
  log(
    `\nworker threads busy (ms), without / with: ${workers.map((w) => `${Math.round(busyMsIn(w, last(windows.none)) / 1000)} / ${Math.round(busyMsIn(w, last(windows.three)) / 1000)}`).join(', ')}`,
  );
  // the webhook thread: the worker whose busy time grows most with endpoints
  const grown = (w: (typeof workers)[number]) => busyMsIn(w, last(windows.three)) - busyMsIn(w, last(windows.none));
  const webhook = workers.reduce<(typeof workers)[number] | undefined>(
    (a, w) => (!a || grown(w) > grown(a) ? w : a),
    undefined,
  );
  if (webhook) {
    log(`\nthe webhook thread during the last run with endpoints, per apply (its work after the run not included):`);
    for (const line of formatSummary(
      summariseProfile(webhook, SERVICE_ROOT, last(windows.three), windows.requests.three),
      undefined,
      'the webhook thread (sampled wall time: at nice 10, time it waited for a CPU may count)',
    ))
      log(line);
  }
};
