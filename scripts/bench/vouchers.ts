/** Setup through the service's API (not timed): the vouchers the chosen scenarios need. */
import {
  HEADERS,
  HOT_CODE,
  SPREAD_POOL,
  VALIDATE_POOL,
  spreadCode,
  validateCode,
  voucherBody,
  type Scenario,
} from './scenarios.ts';

type Pool = Scenario['pool'];
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- setup reads the API's JSON answers loosely
type Json = any;

export const api = async (
  baseUrl: string,
  method: string,
  urlPath: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> => {
  const res = await fetch(`${baseUrl}${urlPath}`, {
    method,
    headers: HEADERS,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* keep text */
  }
  return { status: res.status, body: parsed };
};

/** Runs `task(i)` for i in [0, count) with at most `concurrency` in flight. */
const pool = async (count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> => {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
};

export const createVouchers = async (baseUrl: string, needed: Set<Pool>): Promise<{ hotId?: string }> => {
  const create = async (body: Record<string, unknown>) => {
    const res = await api(baseUrl, 'POST', '/v1/vouchers', body);
    if (res.status !== 201)
      throw new Error(`creating ${String(body.code)} failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string };
  };
  if (needed.has('validate'))
    await pool(VALIDATE_POOL, 8, async (i) => {
      await create(voucherBody(validateCode(i), i, true));
    });
  if (needed.has('spread'))
    await pool(SPREAD_POOL, 8, async (i) => {
      await create(voucherBody(spreadCode(i), i, false));
    });
  if (!needed.has('hot')) return {};
  const hot = await create({
    code: HOT_CODE,
    type: 'percentage',
    value: 10,
    currency: 'USD',
    conditions: { min_order_value: 1_000 },
  });
  return { hotId: hot.id };
};
