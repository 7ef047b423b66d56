/**
 * Apply without an atomic two-stream append (`two-append`): a crash between the order's
 * reservation and the voucher's VoucherApplied, or between that and the order's confirmation,
 * loses no use and counts none twice. The crash is a fault hook that throws where the process
 * would have died (nothing after it runs), followed by a restart on the same files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { applyBody } from '../fixtures/orders.ts';
import { fixedVoucher, percentageVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { TestService } from '../support/harness.ts';
import { RESERVATION_TTL_MS } from '../../src/application/orders.ts';
import type { ApplyMode } from '../../src/application/context.ts';
import { environmentFiles } from '../../src/composition.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { exitWithin, killAll, startService as startServiceProcess, type RunningService } from '../support/processes.ts';

class Crash extends Error {}

describe('HTTP apply (two-append): a crash between the appends', () => {
  const clock = new FakeClock();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-apply-crash-'));
  /** Orders whose apply dies after the reservation, and after the voucher's VoucherApplied. */
  const dieAfterReserve = new Set(['o-before', 'o-other-before']);
  const dieAfterApply = new Set(['o-after', 'o-other-after']);
  let service: TestService;
  let limited: any; // PCT10 with max_uses 2
  let other: any; // FIX100, not stackable

  const orderTypes = async (orderId: string) =>
    (await service.sandbox.events.readStream(`order-${orderId}`)).map((e) =>
      e.type === 'OrderVoucherDetached' ? `${e.type}:${(e.data as any).reason}` : e.type,
    );
  const voucherTypes = async (voucherId: string) =>
    (await service.sandbox.events.readStream(`voucher-${voucherId}`)).map((e) => e.type);
  const apply = (code: string, orderId: string) =>
    service.post('/v1/vouchers/apply', applyBody(code, orderId, { value: 10_000, currency: 'USD' }));

  before(async () => {
    service = await TestService.start({
      dataDir,
      clock,
      applyMode: 'two-append',
      applyHooks: {
        afterReserve: (orderId) => {
          if (dieAfterReserve.has(orderId)) throw new Crash(`died after reserving ${orderId}`);
        },
        afterApply: (orderId) => {
          if (dieAfterApply.has(orderId)) throw new Crash(`died after applying to ${orderId}`);
        },
      },
    });
    limited = await service.createVoucher(percentageVoucher('PCT10', { conditions: { max_uses: 2 } }));
    other = await service.createVoucher(fixedVoucher('FIX100'));
    for (const [code, orderId] of [
      ['PCT10', 'o-before'],
      ['PCT10', 'o-after'],
      ['FIX100', 'o-other-before'],
      ['FIX100', 'o-other-after'],
    ] as const) {
      expect((await apply(code, orderId)).status, orderId).to.equal(500); // the client saw the connection die
    }
    // What the crashes left: reservations only; one VoucherApplied per crash after the voucher's append.
    for (const orderId of ['o-before', 'o-after', 'o-other-before', 'o-other-after'])
      expect(await orderTypes(orderId), orderId).to.deep.equal(['OrderVoucherReserved']);
    expect(await voucherTypes(limited.id)).to.deep.equal(['VoucherCreated', 'VoucherApplied']);
    expect(await voucherTypes(other.id)).to.deep.equal(['VoucherCreated', 'VoucherApplied']);
    // The process ends; a new one starts on the same files (nothing of the old one's memory).
    await service.stop(true);
    service = await TestService.start({ dataDir, clock, applyMode: 'two-append' });
  });
  after(async () => {
    await service.stop();
  });

  it('counts the use the voucher recorded before the crash, and only it', async () => {
    const res = await service.get(`/v1/vouchers/${limited.id}`);
    expect(res.body.usage_count).to.equal(1);
  });

  it('a repeat after a crash after the voucher append answers the recorded application and confirms it on the order', async () => {
    const recorded = (await service.sandbox.events.readStream(`voucher-${limited.id}`)).find(
      (e) => e.type === 'VoucherApplied',
    )!;
    const again = await apply('PCT10', 'o-after');
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body).to.include({ id: (recorded.data as any).applicationId, discount_amount: 1000 });
    expect(await orderTypes('o-after')).to.deep.equal(['OrderVoucherReserved', 'OrderVoucherConfirmed']);
    expect((await service.get(`/v1/vouchers/${limited.id}`)).body.usage_count).to.equal(1);
  });

  it('a repeat after a crash before the voucher append voids the orphan and applies anew', async () => {
    const again = await apply('PCT10', 'o-before');
    expect(again.status, JSON.stringify(again.body)).to.equal(201);
    expect(await orderTypes('o-before')).to.deep.equal([
      'OrderVoucherReserved',
      'OrderVoucherDetached:abandoned',
      'OrderVoucherReserved',
      'OrderVoucherConfirmed',
    ]);
    const events = await service.sandbox.events.readStream(`voucher-${limited.id}`);
    const voided = events.find((e) => e.type === 'VoucherReservationVoided')!;
    const [first] = await service.sandbox.events.readStream('order-o-before');
    expect((voided.data as any).applicationId).to.equal((first!.data as any).applicationId);
    expect(events.map((e) => e.type)).to.deep.equal([
      'VoucherCreated',
      'VoucherApplied',
      'VoucherReservationVoided',
      'VoucherApplied',
    ]);
  });

  it('max_uses 2: the two recorded uses are all there is, neither lost nor counted twice', async () => {
    const res = await service.get(`/v1/vouchers/${limited.id}`);
    expect(res.body.usage_count).to.equal(2);
    const apps = await service.get(`/v1/vouchers/${limited.id}/applications`);
    expect(apps.body.total).to.equal(2);
    const third = await apply('PCT10', 'o-third');
    expect(third.status).to.equal(400);
    expect(third.body.error).to.deep.include({ code: 'USAGE_LIMIT_EXCEEDED' });
    expect(third.body.error.details).to.include({ max_uses: 2, current_uses: 2 });
  });

  it("another voucher meets a young orphan as another process's apply in flight (409), and settles it once it is old", async () => {
    const early = await apply('PCT10', 'o-other-before');
    expect(early.status).to.equal(409);
    expect(early.body.error.code).to.equal('CONCURRENT_MODIFICATION');
    clock.advance(RESERVATION_TTL_MS);
    // PCT10 is used up: the refusal is the voucher's, after the orphan was settled (abandoned).
    const late = await apply('PCT10', 'o-other-before');
    expect(late.status).to.equal(400);
    expect(late.body.error.code).to.equal('USAGE_LIMIT_EXCEEDED');
    expect(await orderTypes('o-other-before')).to.deep.equal([
      'OrderVoucherReserved',
      'OrderVoucherDetached:abandoned',
    ]);
  });

  it('an old orphan whose voucher recorded the application is confirmed: the order carries it', async () => {
    const stacked = await service.createVoucher(percentageVoucher('PCT20', { value: 20 }));
    const res = await apply('PCT20', 'o-other-after');
    expect(res.status, JSON.stringify(res.body)).to.equal(409);
    expect(res.body.error.code).to.equal('STACKING_CONFLICT');
    expect(res.body.error.details).to.include({ conflicting_voucher: 'FIX100' });
    expect(await orderTypes('o-other-after')).to.deep.equal(['OrderVoucherReserved', 'OrderVoucherConfirmed']);
    expect((await service.get(`/v1/vouchers/${other.id}`)).body.usage_count).to.equal(1);
    expect((await service.get(`/v1/vouchers/${stacked.id}`)).body.usage_count).to.equal(0);
  });

  it('the log holds no other public event: voids are the voucher stream’s own, not applications', async () => {
    const all = await service.sandbox.events.readAll();
    const applied = all.filter((e) => e.type === 'VoucherApplied');
    expect(applied).to.have.length(3); // PCT10 twice, FIX100 once
    const apps = await service.get('/v1/vouchers?limit=100');
    const total = (apps.body.data as Array<{ usage_count: number }>).reduce((n, v) => n + v.usage_count, 0);
    expect(total).to.equal(3);
  });
});

describe('HTTP apply (two-append): a real process killed while applies are in flight', function () {
  this.timeout(120_000);
  const KEY = 'sk_test_ApplyCrash0Sandbox0Key00000001';
  const ORDERS = 120;
  const LIMIT = 70;
  let dataDir: string;

  const start = () =>
    startServiceProcess({
      DATA_DIR: dataDir,
      VOUCHER_API_KEYS: KEY,
      APPLY_MODE: 'two-append',
      RATE_LIMITS: 'off',
      SNAPSHOT_EVERY: '3',
    });
  const call = async (service: RunningService, urlPath: string, body?: unknown) => {
    const res = await fetch(`${service.base}${urlPath}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const applyTo = (i: number) => applyBody('KILLED', `k-${i}`, { value: 10_000 + i, currency: 'USD' });

  after(async () => {
    await killAll();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('after a restart, repeating every apply settles every reservation; the uses are exactly max_uses, each answered once as new', async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-apply-kill-'));
    const first = await start();
    const created = await call(first, '/v1/vouchers', percentageVoucher('KILLED', { conditions: { max_uses: LIMIT } }));
    expect(created.status).to.equal(201);
    // Fire every apply, and kill the process (SIGKILL) once a tenth of them have been answered.
    let answered = 0;
    const acked = new Map<number, string>();
    let killed!: () => void;
    const tenth = new Promise<void>((resolve) => (killed = resolve));
    const inFlight = Array.from({ length: ORDERS }, (_, i) =>
      call(first, '/v1/vouchers/apply', applyTo(i))
        .then((res) => {
          if (res.status === 201) acked.set(i, res.body.id);
          if (++answered === ORDERS / 10) killed();
        })
        .catch(() => undefined),
    );
    await tenth;
    first.proc.child.kill('SIGKILL');
    expect((await exitWithin(first.proc, 10_000)).signal).to.equal('SIGKILL');
    await Promise.all(inFlight);

    const second = await start();
    const outcomes: Array<{ status: number; body: any }> = [];
    for (let i = 0; i < ORDERS; i += 1) outcomes.push(await call(second, '/v1/vouchers/apply', applyTo(i)));
    // An acknowledged application is answered again as itself (200), never applied twice.
    for (const [i, id] of acked) {
      expect(outcomes[i]!.status, `k-${i}`).to.equal(200);
      expect(outcomes[i]!.body.id, `k-${i}`).to.equal(id);
    }
    const ok = outcomes.filter((o) => o.status === 200 || o.status === 201);
    expect(ok, JSON.stringify(outcomes.filter((o) => o.status >= 300 && o.status !== 400))).to.have.length(LIMIT);
    expect(outcomes.filter((o) => o.status === 400).map((o) => o.body.error.code)).to.deep.equal(
      Array(ORDERS - LIMIT).fill('USAGE_LIMIT_EXCEEDED'),
    );
    const voucher = await call(second, `/v1/vouchers/${created.body.id}`);
    expect(voucher.body.usage_count).to.equal(LIMIT);
    second.proc.child.kill('SIGTERM');
    expect((await exitWithin(second.proc, 15_000)).code).to.equal(0);

    // The log: one VoucherApplied per use, and every order's reservations settled.
    const events = SqliteEventStore.open(environmentFiles(dataDir, 'sandbox').events);
    try {
      const all = await events.readAll();
      expect(all.filter((e) => e.type === 'VoucherApplied')).to.have.length(LIMIT);
      const idOf = (e: { data: unknown }) => (e.data as { applicationId: string }).applicationId;
      const settled = new Set(
        all.filter((e) => e.type === 'OrderVoucherConfirmed' || e.type === 'OrderVoucherDetached').map(idOf),
      );
      const open = all.filter((e) => e.type === 'OrderVoucherReserved' && !settled.has(idOf(e)));
      expect(open.map((e) => e.streamId)).to.deep.equal([]);
    } finally {
      await events.close();
    }
  });
});

describe('HTTP apply: the two modes have the same public effect', () => {
  /** One scenario: applies, a stacking refusal, a limit refusal, repeats, a rollback; what the public sees. */
  const scenario = async (applyMode: ApplyMode) => {
    const service = await TestService.start({ applyMode });
    try {
      const limited = await service.createVoucher(percentageVoucher('SAME10', { conditions: { max_uses: 3 } }));
      const fixed = await service.createVoucher(fixedVoucher('SAME100'));
      const answers: unknown[] = [];
      const apply = async (code: string, orderId: string) => {
        const res = await service.post(
          '/v1/vouchers/apply',
          applyBody(code, orderId, { value: 10_000, currency: 'USD' }, { id: 'cus_1' }),
        );
        answers.push([res.status, res.body.error?.code ?? res.body.discount_amount]);
        return res;
      };
      const first = await apply('SAME10', 'p-1');
      await apply('SAME10', 'p-1'); // repeat
      await apply('SAME100', 'p-1'); // stacking conflict
      await apply('SAME10', 'p-2');
      await apply('SAME10', 'p-3');
      await apply('SAME10', 'p-4'); // max_uses reached
      await service.post(`/v1/vouchers/applications/${first.body.id}/rollback`, {});
      await apply('SAME100', 'p-1'); // the order is free again
      await apply('SAME10', 'p-5'); // and so is a use
      const publicEvents = (await service.sandbox.events.readAll())
        .filter((e) => e.streamId.startsWith('voucher-') && e.type !== 'VoucherReservationVoided')
        .map((e) => [e.type, (e.data as any).code ?? null, (e.data as any).discountAmount ?? null]);
      const usage = [
        (await service.get(`/v1/vouchers/${limited.id}`)).body.usage_count,
        (await service.get(`/v1/vouchers/${fixed.id}`)).body.usage_count,
      ];
      return { answers, publicEvents, usage };
    } finally {
      await service.stop();
    }
  };

  it('the same answers, public events and usage counts', async () => {
    const atomic = await scenario('atomic');
    const twoAppends = await scenario('two-append');
    expect(twoAppends).to.deep.equal(atomic);
    expect(atomic.usage).to.deep.equal([3, 1]);
    expect(atomic.answers).to.have.length(8);
  });
});
