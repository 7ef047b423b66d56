/**
 * The bench's analytics read: `GET /analytics/vouchers/{id}/performance` over 90 days on a voucher
 * with 100,000 applications (1,000 customers, every day of the window; `--analytics-applications`
 * and `--analytics-customers` change the size), as a ratio to the ceiling.
 *
 * Seeding 100,000 applications through HTTP would take minutes, so this scenario seeds a separate
 * DATA_DIR by appending events straight to the sandbox event store (bench-only path): the code
 * claim, the voucher's creation, the VoucherApplied events in appends of 1,000, and per append
 * one OrderAttemptsRecorded with ATTEMPTS_PER_USE attempts per application (its own order id plus
 * abandoned ones: conversion 0.5). The service is then started on that DATA_DIR;
 * its projectors fold the log on start (not timed), and the scenario waits until the performance
 * endpoint reports every application before measuring. Nothing is cached between requests: each
 * one reads the window's daily documents (at most 90).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { environmentFiles } from '../../src/composition.ts';
import type { Proc as Child } from '../lib/processes.ts';
import { isoSeconds } from '../../src/domain/clock.ts';
import { median } from './load.ts';

export const ANALYTICS_SCENARIO_ID = 'analytics-performance';
const DAYS = 90;
const ATTEMPTS_PER_USE = 2;
const VOUCHER_ID = 'v_BenchAnalytics00000001';
const CODE = 'BENCHANALYTICS';

export interface AnalyticsBenchDeps {
  serviceRoot: string;
  apiKey: string;
  /** The service's RATE_LIMITS setting (lifted limits, or off). */
  rateLimits: string;
  connections: number;
  /** Applications of the voucher, and the customers they cycle through. */
  applications: number;
  customers: number;
  durationS: number;
  warmupS: number;
  keepData: boolean;
  tempDirs: string[];
  log(msg: string): void;
  freePort(): Promise<number>;
  /** The compiled service of checkout `root`, started as `npm start` starts it. */
  startService(name: string, root: string, env: Record<string, string>): Child;
  waitForHealth(child: Child, baseUrl: string, timeoutMs?: number): Promise<void>;
  stopChild(child: Child): Promise<void>;
  /** The ceiling's req/s measured right before this scenario. */
  ceilingReqPerSec(): Promise<number>;
}

const iso = (ms: number) => isoSeconds(new Date(ms));

/** Appends the voucher, its applications and their attempts to the sandbox event store of `dataDir`. */
const seed = async (
  dataDir: string,
  endDay: string,
  APPLICATIONS: number,
  CUSTOMERS: number,
): Promise<{ startDay: string }> => {
  const events = SqliteEventStore.open(environmentFiles(dataDir, 'sandbox').events);
  const endMs = Date.parse(`${endDay}T00:00:00Z`);
  const startMs = endMs - (DAYS - 1) * 86_400_000;
  const created = iso(startMs - 86_400_000);
  await events.appendToStream(`voucherCode-${CODE.toLowerCase()}`, [
    { type: 'VoucherCodeClaimed', data: { code: CODE, voucherId: VOUCHER_ID, claimedAt: created } },
  ]);
  await events.appendToStream(`voucher-${VOUCHER_ID}`, [
    {
      type: 'VoucherCreated',
      data: {
        voucherId: VOUCHER_ID,
        code: CODE,
        voucherType: 'percentage',
        value: 10,
        currency: 'USD',
        conditions: {},
        createdAt: created,
      },
    },
  ]);
  for (let start = 0; start < APPLICATIONS; start += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, APPLICATIONS - start) }, (_, k) => {
      const i = start + k;
      const at = iso(startMs + Math.floor((i / APPLICATIONS) * DAYS * 86_400_000));
      const orderValue = 5_000 + (i % 50) * 100;
      const discount = Math.round(orderValue / 10);
      return {
        type: 'VoucherApplied',
        data: {
          voucherId: VOUCHER_ID,
          applicationId: `va_bench${i}`,
          code: CODE,
          orderId: `ord_${i}`,
          customerId: `cus_${i % CUSTOMERS}`,
          customerSegment: ['regular', 'vip', 'new'][i % 3],
          customerRegion: ['eu', 'us', 'apac', 'latam'][i % 4],
          orderValue,
          discountAmount: discount,
          finalAmount: orderValue - discount,
          currency: 'USD',
          appliedTo: [],
          orderFingerprint: `of${i}`,
          customerFingerprint: `cf${i % CUSTOMERS}`,
          appliedAt: at,
        },
      };
    });
    await events.appendToStream(`voucher-${VOUCHER_ID}`, batch, { expectedRevision: 'any' });
    const attempts = batch.flatMap((e) =>
      Array.from({ length: ATTEMPTS_PER_USE }, (_, n) => ({
        voucherId: VOUCHER_ID,
        orderId: n === 0 ? e.data.orderId : `${e.data.orderId}_abandoned${n}`,
        segment: e.data.customerSegment,
        at: e.data.appliedAt,
      })),
    );
    await events.appendToStream(
      `telemetry-${batch[0]!.data.appliedAt.slice(0, 10)}`,
      [{ type: 'OrderAttemptsRecorded', data: { attempts, recordedAt: batch[0]!.data.appliedAt } }],
      { expectedRevision: 'any' },
    );
  }
  await events.close();
  return { startDay: iso(startMs).slice(0, 10) };
};

export const benchAnalytics = async (deps: AnalyticsBenchDeps) => {
  const { log, applications: APPLICATIONS, customers: CUSTOMERS } = deps;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-bench-analytics-'));
  if (deps.keepData) log(`analytics DATA_DIR ${dataDir} (kept)`);
  else deps.tempDirs.push(dataDir);
  const endDay = new Date().toISOString().slice(0, 10);
  log(
    `seeding ${APPLICATIONS.toLocaleString('en-US')} applications of one voucher over ${DAYS} days straight into the event store (not timed) ...`,
  );
  let started = Date.now();
  const { startDay } = await seed(dataDir, endDay, APPLICATIONS, CUSTOMERS);
  log(`  done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const port = await deps.freePort();
  const service = deps.startService('analytics service', deps.serviceRoot, {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    VOUCHER_API_KEYS: deps.apiKey,
    LOG_LEVEL: 'warn',
    RATE_LIMITS: deps.rateLimits,
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${deps.apiKey}` };
  const url = `${baseUrl}/v1/analytics/vouchers/${VOUCHER_ID}/performance?start_date=${startDay}&end_date=${endDay}`;
  try {
    await deps.waitForHealth(service, baseUrl, 300_000);
    log('waiting for the projectors to fold the seeded log (not timed) ...');
    started = Date.now();
    for (;;) {
      const res = await fetch(url, { headers });
      const body = (await res.json()) as { performance?: { total_uses: number } };
      // both groups: the analytics one, and the core one (usage history) still folding would share the CPU
      const voucher = (await (await fetch(`${baseUrl}/v1/vouchers/${VOUCHER_ID}`, { headers })).json()) as {
        usage_count?: number;
      };
      if (res.status === 200 && body.performance?.total_uses === APPLICATIONS && voucher.usage_count === APPLICATIONS)
        break;
      if (Date.now() - started > 600_000)
        throw new Error(`analytics not caught up after 600 s: ${res.status} ${JSON.stringify(body)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    log(`  done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // Single requests, one after another, on 30 windows of 61 to 90 days (no two alike): the latency of one query.
    const latencies: number[] = [];
    for (let k = 0; k < 30; k += 1) {
      const from = iso(Date.parse(`${startDay}T00:00:00Z`) + k * 86_400_000).slice(0, 10);
      const t = performance.now();
      const res = await fetch(url.replace(`start_date=${startDay}`, `start_date=${from}`), { headers });
      await res.text();
      latencies.push(performance.now() - t);
      if (res.status !== 200) throw new Error(`performance query failed: ${res.status}`);
    }
    log(
      `  single requests on 30 distinct windows of 61-90 days: median ${median(latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
    );
    const ceiling = await deps.ceilingReqPerSec();
    log(
      `measuring analytics performance (90 days, ${APPLICATIONS.toLocaleString('en-US')} applications, ${CUSTOMERS.toLocaleString('en-US')} customers) ...`,
    );
    const common = { url, connections: deps.connections, pipelining: 1, timeout: 10, headers };
    await autocannon({ ...common, duration: deps.warmupS });
    const cpuBefore = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const result = await autocannon({ ...common, duration: deps.durationS });
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpuBefore);
    const reqPerSec = result.requests.mean;
    return {
      id: ANALYTICS_SCENARIO_ID,
      title: `analytics performance (90 d, ${APPLICATIONS >= 1_000_000 ? `${APPLICATIONS / 1_000_000}M` : `${APPLICATIONS / 1_000}k`} applications)`,
      reqPerSec,
      p50: result.latency.p50,
      p99: result.latency.p99,
      total: result.requests.total,
      ok2xx: result['2xx'],
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      ceilingReqPerSec: ceiling,
      ratio: reqPerSec / ceiling,
      target: null,
      verdict: 'INFO' as const,
      serverCpu: null,
      loadGenCpu: (cpu.user + cpu.system) / 1e6 / wall,
      otherCpu: null,
      serverCpuMsPerReq: null,
      threadCpuMsPerReq: null,
      cpuRatio: null,
    };
  } finally {
    await deps.stopChild(service);
  }
};
