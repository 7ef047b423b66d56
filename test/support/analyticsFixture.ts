/**
 * A small history for the analytics tests, every figure computed by hand in
 * test/http/analytics.test.ts. Voucher P: 10% off. Voucher Q: 500 off (only for customer c3's
 * earlier history). Times are UTC; the window under test is 2026-03-02 (Mon) .. 2026-03-08 (Sun).
 *
 *  when                  action                                   value  disc  final  segment  region
 *  2026-02-20T10:00:00Z  Q apply q1 (c3)                          5000   500   4500   regular  us
 *  2026-03-01T23:59:59Z  P validate+apply o1 (c1)                 10000  1000  9000   vip      eu     (day before the window)
 *  2026-03-02T00:00:00Z  P validate+apply o2 (c1)                 20000  2000  18000  vip      eu
 *  2026-03-02T10:00:00Z  P validate o3 (c2), never applied                             regular
 *  2026-03-02T11:00:00Z  P validate, no order id, no customer                          unknown
 *  2026-03-03T09:00:00Z  P validate o4 twice, apply o4 (c2)       8000   800   7200   regular  us
 *  2026-03-05T15:00:00Z  P apply o5 (c3) without validate         12000  1200  10800  regular  us
 *  2026-03-06T12:00:00Z  P validate+apply o6 (c3)                 6000   600   5400   regular  us     (rolled back 03-08)
 *  2026-03-07T08:00:00Z  P validate+apply o7 (c4)                 15000  1500  13500  vip      (none)
 *  2026-03-08T20:00:00Z  rollback of o6
 *  2026-03-08T23:59:59Z  P validate+apply o8 (c2)                 4000   400   3600   regular  us
 *  2026-03-09T00:00:00Z  P apply o9 (c2)                          10000  1000  9000   regular  us     (day after the window)
 * Queries run at 2026-03-10T12:00:00Z.
 */
import { applyBody, validateBody } from '../fixtures/orders.ts';
import { fixedVoucher, percentageVoucher } from '../fixtures/vouchers.ts';
import type { TestService } from './harness.ts';

export const NOW = '2026-03-10T12:00:00Z';

const customers = {
  c1: { id: 'c1', segment: 'vip', region: 'eu' },
  c2: { id: 'c2', segment: 'regular', region: 'us' },
  c3: { id: 'c3', segment: 'regular', region: 'us' },
  c4: { id: 'c4', segment: 'vip' },
} as const;
type CustomerKey = keyof typeof customers;

export interface Fixture {
  p: { id: string; code: string };
  q: { id: string; code: string };
  applications: Record<string, string>;
}

/** Flushes the order-attempt buffer and waits until the analytics read models reflect the whole log. */
export const settle = async (service: TestService): Promise<void> => {
  for (const ctx of [service.sandbox, service.production]) {
    await ctx.telemetry.flush();
    const ok = await ctx.analytics.waitFor(await ctx.events.headPosition(), 10_000);
    if (!ok) throw new Error('analytics projection did not catch up');
  }
};

const ok = (res: { status: number; body: unknown }, status: number, what: string) => {
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as any;
};

export const buildFixture = async (service: TestService, codeSuffix = ''): Promise<Fixture> => {
  const at = (iso: string) => service.clock.set(iso);
  at('2026-02-01T00:00:00Z');
  const p = await service.createVoucher(percentageVoucher(`PERF10${codeSuffix}`, { value: 10 }));
  const q = await service.createVoucher(fixedVoucher(`FLAT5${codeSuffix}`, { value: 500 }));
  const applications: Record<string, string> = {};
  const validate = async (orderId: string | undefined, value: number, c?: CustomerKey) =>
    ok(
      await service.post(
        '/v1/vouchers/validate',
        validateBody(p.code, { ...(orderId ? { id: orderId } : {}), value }, c ? customers[c] : undefined),
      ),
      200,
      `validate ${orderId}`,
    );
  const apply = async (code: string, orderId: string, value: number, c: CustomerKey) => {
    applications[orderId] = ok(
      await service.post('/v1/vouchers/apply', applyBody(code, orderId, { value }, customers[c])),
      201,
      `apply ${orderId}`,
    ).id;
  };

  at('2026-02-20T10:00:00Z');
  await apply(q.code, 'q1', 5_000, 'c3');
  at('2026-03-01T23:59:59Z');
  await validate('o1', 10_000, 'c1');
  await apply(p.code, 'o1', 10_000, 'c1');
  at('2026-03-02T00:00:00Z');
  await validate('o2', 20_000, 'c1');
  await apply(p.code, 'o2', 20_000, 'c1');
  at('2026-03-02T10:00:00Z');
  await validate('o3', 3_000, 'c2');
  at('2026-03-02T11:00:00Z');
  await validate(undefined, 3_000);
  await service.sandbox.telemetry.flush(); // o4's two validations land in different flushes: still one attempt
  at('2026-03-03T09:00:00Z');
  await validate('o4', 8_000, 'c2');
  await service.sandbox.telemetry.flush();
  await validate('o4', 8_000, 'c2');
  await apply(p.code, 'o4', 8_000, 'c2');
  at('2026-03-05T15:00:00Z');
  await apply(p.code, 'o5', 12_000, 'c3');
  at('2026-03-06T12:00:00Z');
  await validate('o6', 6_000, 'c3');
  await apply(p.code, 'o6', 6_000, 'c3');
  at('2026-03-07T08:00:00Z');
  await validate('o7', 15_000, 'c4');
  await apply(p.code, 'o7', 15_000, 'c4');
  at('2026-03-08T20:00:00Z');
  ok(
    await service.post(`/v1/vouchers/applications/${applications.o6}/rollback`, { reason: 'returned' }),
    200,
    'rollback o6',
  );
  at('2026-03-08T23:59:59Z');
  await validate('o8', 4_000, 'c2');
  await apply(p.code, 'o8', 4_000, 'c2');
  at('2026-03-09T00:00:00Z');
  await apply(p.code, 'o9', 10_000, 'c2');
  at(NOW);
  await settle(service);
  return { p, q, applications };
};

/** Polls an export's status until it is no longer `processing` (bounded: 600 polls, 50 ms apart). */
export const waitForExport = async (fetchStatus: () => Promise<{ status: number; body: any }>): Promise<any> => {
  for (let i = 0; i < 600; i += 1) {
    const res = await fetchStatus();
    if (res.status !== 200) throw new Error(`status: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.status !== 'processing') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('export still processing after 600 polls');
};
