/**
 * What a message to another thread costs the thread that posts it, when the receiving thread is
 * awake and when it sleeps (decision 084): the wall time of `postMessage` to a worker thread,
 * posted back to back (the worker is still handling the previous ones) and one every 2 ms (the
 * worker waits in its event loop between them, as the service's threads do at a moderate rate).
 * The message is a commit's worth of rows, about what the main thread hands the projector thread.
 *
 *   tsx scripts/bench/threadWake.ts [rounds, default 5]
 *
 * Each round posts 2,000 messages back to back and 500 spaced ones, alternating which goes
 * first; the medians over the rounds are printed. `postMessage` returns once the message is queued
 * and the receiving thread signalled, so its wall time is the poster's CPU for both.
 */
import { Worker } from 'node:worker_threads';
import { sleep } from '../lib/processes.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const BACK_TO_BACK = 2_000;
const SPACED = 500;
const GAP_MS = 2;

const rows = Array.from({ length: 2 }, (_, i) => ({
  position: i + 1,
  id: `ev_${'0'.repeat(30)}${i}`,
  stream_id: 'voucher-v_0123456789abcdef',
  revision: i,
  type: 'VoucherApplied',
  data: JSON.stringify({ note: 'x'.repeat(640) }),
  metadata: '{}',
  recorded_at: '2026-11-28T10:00:00.000Z',
}));

const worker = new Worker(
  `require('node:worker_threads').parentPort.on('message', (m) => { let n = 0; for (const r of m.rows) n += r.data.length; return n; });`,
  { eval: true },
);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** Mean wall time of one postMessage, µs. */
const post = async (count: number, gapMs: number): Promise<number> => {
  let ns = 0n;
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    worker.postMessage({ rows });
    ns += process.hrtime.bigint() - start;
    if (gapMs > 0) await sleep(gapMs);
    else if (i % 100 === 99) await new Promise((resolve) => setImmediate(resolve));
  }
  return Number(ns) / count / 1_000;
};

await sleep(200);
const awake: number[] = [];
const asleep: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  if (round % 2 === 0) {
    awake.push(await post(BACK_TO_BACK, 0));
    asleep.push(await post(SPACED, GAP_MS));
  } else {
    asleep.push(await post(SPACED, GAP_MS));
    awake.push(await post(BACK_TO_BACK, 0));
  }
}
const fmt = (values: number[]) => values.map((v) => v.toFixed(1)).join(', ');
console.log(`postMessage, worker awake (back to back): ${fmt(awake)} µs; median ${median(awake).toFixed(1)} µs`);
console.log(
  `postMessage, worker asleep (one every ${GAP_MS} ms): ${fmt(asleep)} µs; median ${median(asleep).toFixed(1)} µs`,
);
console.log(`asleep / awake: ${(median(asleep) / median(awake)).toFixed(1)}×`);
await worker.terminate();
