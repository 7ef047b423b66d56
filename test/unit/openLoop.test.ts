/**
 * The bench's open-loop generator (scripts/bench/openLoop.ts): requests go out on a fixed schedule
 * whatever the answers, and latency counts from each request's scheduled time, so a stall of the
 * server or of the client itself shows in the latencies of every request scheduled during it.
 * Driven by a fake clock and a fake server: nothing here depends on the machine's speed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  OpenLoop,
  mergeRuns,
  percentile,
  percentilesOf,
  httpSender,
  runOpenLoop,
  type HttpTarget,
  type Outcome,
} from '../../scripts/bench/openLoop.ts';

/**
 * A fake server on a fake clock: it answers `serviceMs` after a request is sent, except that
 * nothing is answered while it is stalled ([stallFrom, stallTo)): what arrived by then is answered at stallTo.
 */
const fakeRun = ({
  rate,
  count,
  maxInFlight = 1_000,
  serviceMs = 0.5,
  stall,
  clientAsleep,
  unmeasured,
}: {
  rate: number;
  count: number;
  unmeasured?: number;
  maxInFlight?: number;
  serviceMs?: number;
  stall?: [number, number];
  /** The client's event loop does not run (no tick, no answer delivered) in [from, to). */
  clientAsleep?: [number, number];
}) => {
  let now = 0;
  const pending: Array<{ at: number; done: (o: Outcome) => void }> = [];
  const loop = new OpenLoop({
    rate,
    count,
    maxInFlight,
    unmeasured,
    now: () => now,
    send: (_n, done) => {
      let at = now + serviceMs;
      if (stall && at >= stall[0] && at < stall[1]) at = stall[1];
      pending.push({ at, done });
    },
  });
  loop.start();
  const step = 0.25;
  for (now = 0; !loop.finished; now += step) {
    if (now > 10 * (count / rate) * 1000 + 1000) throw new Error('fake run did not finish');
    if (clientAsleep && now >= clientAsleep[0] && now < clientAsleep[1]) continue;
    for (const p of pending.filter((q) => q.at <= now)) {
      pending.splice(pending.indexOf(p), 1);
      p.done({ status: 200 });
    }
    loop.tick();
  }
  return { ...loop.result(), samples: loop.samples(), leadIn: loop.leadIn() };
};

const target = (port: number): HttpTarget => ({
  url: `http://127.0.0.1:${port}/x`,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: (n) => `{"n":${n}}`,
});

describe('open-loop load generator', () => {
  it('computes percentiles by nearest rank', () => {
    const values = Array.from({ length: 1_000 }, (_, i) => 1_000 - i); // 1..1000, unsorted
    expect(percentilesOf(values)).to.deep.equal({ p50: 500, p90: 900, p99: 990, p999: 999, max: 1_000 });
    expect(percentile([7], 99.9)).to.equal(7);
    expect(percentile([1, 2], 50)).to.equal(1);
    expect(percentile([1, 2], 51)).to.equal(2);
    expect(percentile([], 50)).to.be.NaN;
  });

  it('counts a server stall in the latency of every request scheduled during it, from its scheduled time', () => {
    // 1 request per ms for 300 ms; the server answers in 0.5 ms but answers nothing from 100 to 150 ms.
    const result = fakeRun({ rate: 1_000, count: 300, stall: [100, 150] });
    expect(result).to.include({ sent: 300, answered: 300, ok2xx: 300, capHit: false });
    // Requests scheduled at 100..149 ms are answered at 150: latencies 50, 49, ..., 1; the other
    // 250 take 0.5 ms. Sorted: 250 × 0.5, then 1, 2, ..., 50.
    expect(result.latency.p50).to.equal(0.5);
    expect(result.latency.p90).to.equal(20); // rank 270
    expect(result.latency.p99).to.equal(47); // rank 297
    expect(result.latency.p999).to.equal(50); // rank 300
    expect(result.latency.max).to.equal(50);
    // Sent on time all along: the generator never lagged, the pool grew to hold the stalled requests.
    expect(result.sendLag.max).to.equal(0);
    expect(result.peakInFlight).to.equal(50);
  });

  it("counts the client's own stall: requests it owed are sent in one burst, late, and their lateness is latency", () => {
    // The client's event loop is blocked from 200 to 230 ms: 30 requests were due meanwhile.
    const result = fakeRun({ rate: 1_000, count: 300, clientAsleep: [200, 230] });
    expect(result).to.include({ sent: 300, answered: 300 });
    // The request scheduled at 200 ms goes out at 230 and is answered at 230.5.
    expect(result.latency.max).to.equal(30.5);
    expect(result.sendLag.max).to.equal(30);
    // 270 on time (0.5 ms) and 30 late (30.5, 29.5, ..., 1.5): p90 at rank 270 is still on time.
    expect(result.latency.p90).to.equal(0.5);
    expect(result.latency.p99).to.equal(27.5); // rank 297: the 27th of 1.5..30.5
  });

  it('reports a saturated generator when every connection is busy, and still counts from the schedule', () => {
    const result = fakeRun({ rate: 1_000, count: 300, maxInFlight: 10, stall: [100, 150] });
    expect(result.capHit).to.equal(true);
    expect(result.peakInFlight).to.equal(10);
    expect(result).to.include({ sent: 300, answered: 300 });
    // The 11th request due in the stall waited for a connection: sent at 150, late by 40 ms or more.
    expect(result.sendLag.max).to.be.at.least(40);
    expect(result.latency.max).to.be.at.least(result.sendLag.max);
  });

  it("pools several runs' samples: the percentiles are those of all requests together", () => {
    const stalled = fakeRun({ rate: 1_000, count: 300, stall: [100, 150] });
    const quiet = fakeRun({ rate: 1_000, count: 300 });
    const merged = mergeRuns([
      { result: stalled, samples: stalled.samples },
      { result: quiet, samples: quiet.samples },
    ]);
    expect(merged).to.include({ sent: 600, answered: 600, ok2xx: 600, peakInFlight: 50, capHit: false });
    // 550 × 0.5 ms, then 1..50: rank 594 (p99) is the 44th of 1..50, rank 600 (p99.9) the 50th.
    expect(merged.latency).to.deep.equal({ p50: 0.5, p90: 0.5, p99: 44, p999: 50, max: 50 });
  });

  it('keeps a lead-in out of the result: sent on the same schedule, its latencies reported apart', () => {
    // 1 request per ms; the first 100 are the lead-in, and the server stalls from 40 to 90 ms.
    const run = fakeRun({ rate: 1_000, count: 400, unmeasured: 100, stall: [40, 90] });
    // The 300 measured requests (scheduled at 100..399 ms) all took 0.5 ms.
    expect(run).to.include({ sent: 300, answered: 300, ok2xx: 300 });
    expect(run.samples.latencies).to.have.length(300);
    expect(run.samples.lags).to.have.length(300);
    expect(run.latency).to.deep.equal({ p50: 0.5, p90: 0.5, p99: 0.5, p999: 0.5, max: 0.5 });
    // From the first measured request's schedule (100 ms) to the last answer (399.5 ms).
    expect(run.elapsedMs).to.equal(299.5);
    // The lead-in holds the stall: requests scheduled at 40..89 ms answered at 90 ms (50 down to 1 ms).
    expect(run.leadIn!.result).to.include({ sent: 100, answered: 100 });
    expect(run.leadIn!.samples.latencies).to.have.length(100);
    expect(run.leadIn!.result.latency.max).to.equal(50);
    expect(run.leadIn!.result.latency.p50).to.equal(0.5); // 50 of the 100 on time, then 1..50
    expect(run.leadIn!.result.latency.p90).to.equal(40); // rank 90: the 40th of 1..50
    // The pool's peak is the whole run's: it grew during the lead-in's stall.
    expect(run.peakInFlight).to.equal(50);
  });

  it('has no lead-in by default', () => {
    const run = fakeRun({ rate: 1_000, count: 100, stall: [40, 90] });
    expect(run.leadIn).to.equal(null);
    expect(run).to.include({ sent: 100, answered: 100 });
    expect(run.latency.max).to.equal(50);
  });

  it('does not report saturation when the pool had room', () => {
    const result = fakeRun({ rate: 1_000, count: 300, maxInFlight: 50, stall: [100, 150] });
    expect(result.capHit).to.equal(false);
  });

  it('drives a real HTTP server on keep-alive connections, opening more only while the others are busy', async () => {
    let requests = 0;
    const connections = new Set<unknown>();
    const server = http.createServer((req, res) => {
      connections.add(req.socket);
      requests += 1;
      req.resume();
      req.on('end', () => {
        // One request blocks the server's event loop for 200 ms: the requests due meanwhile pile up.
        if (requests === 20) {
          const until = Date.now() + 200;
          while (Date.now() < until);
        }
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const sender = httpSender(target(port), 100);
      const { result } = await runOpenLoop(sender, { rate: 200, durationS: 1, maxConnections: 100 }).finally(
        sender.close,
      );
      expect(result).to.include({ sent: 200, answered: 200, ok2xx: 200, errors: 0, capHit: false });
      expect(requests).to.equal(200);
      // The request scheduled 5 ms after the blocking one is answered after the block ends.
      expect(result.latency.max).to.be.at.least(190);
      // More than one connection was needed during the block, and far fewer than one per request.
      expect(result.peakInFlight).to.be.greaterThan(1);
      expect(connections.size).to.be.greaterThan(1).and.at.most(result.peakInFlight);
      expect(result.opened).to.equal(connections.size);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('starts a run on the connections an earlier run on the same sender left open; a new sender opens its own', async () => {
    let opened = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    server.on('connection', () => {
      opened += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const kept = httpSender(target((server.address() as AddressInfo).port), 100);
    const fresh = httpSender(target((server.address() as AddressInfo).port), 100);
    try {
      const options = { rate: 100, durationS: 0.3, maxConnections: 100 };
      const first = await runOpenLoop(kept, options);
      expect(first.result.opened).to.be.at.least(1);
      expect(opened).to.equal(first.result.opened);
      const pool = opened;
      const second = await runOpenLoop(kept, options);
      // It opens a connection only if it needed more at once than the first left open.
      expect(second.result.opened).to.equal(opened - pool);
      expect(second.result.opened).to.be.at.most(Math.max(0, second.result.peakInFlight - pool));
      expect(second.result).to.include({ answered: 30, ok2xx: 30 });
      const before = opened;
      const other = await runOpenLoop(fresh, options);
      expect(other.result.opened).to.be.at.least(1);
      expect(opened - before).to.equal(other.result.opened);
    } finally {
      kept.close();
      fresh.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  it('offers a lead-in before the measured requests on one schedule, and returns both', async () => {
    let requests = 0;
    const server = http.createServer((req, res) => {
      requests += 1;
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const sender = httpSender(target((server.address() as AddressInfo).port), 100);
    try {
      const run = await runOpenLoop(sender, { rate: 100, durationS: 0.3, maxConnections: 100, leadInS: 0.2 });
      expect(requests).to.equal(50);
      expect(run.result).to.include({ sent: 30, answered: 30, ok2xx: 30 });
      expect(run.leadIn!.result).to.include({ sent: 20, answered: 20, ok2xx: 20 });
      // the measured part starts 200 ms into the schedule and lasts about its 0.3 s
      expect(run.result.elapsedMs).to.be.at.least(290);
    } finally {
      sender.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
