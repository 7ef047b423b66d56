/**
 * Webhooks survive a SIGKILL of the real service process during deliveries: after the restart on
 * the same DATA_DIR every event is accepted by the receiver (none lost), each repeat carries the
 * same webhook-id and body, every request verifies with standardwebhooks, and each voucher's
 * events are accepted in their order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { exitWithin, killAll, startService, type RunningService } from '../support/processes.ts';
import { until, verify, WebhookReceiver } from '../support/webhookReceiver.ts';

const KEY = 'sk_test_Webhook0Sigkill0Sandbox0Key0001';
const VOUCHERS = 4;
const APPLIES = 24;

const call = async (service: RunningService, method: string, urlPath: string, body?: unknown) => {
  const res = await fetch(`${service.base}${urlPath}`, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

describe('webhooks across a SIGKILL (real process)', function () {
  this.timeout(120_000);
  let receiver: WebhookReceiver;
  let dataDir: string;
  const start = async () => {
    const service = await startService({
      DATA_DIR: dataDir,
      VOUCHER_API_KEYS: KEY,
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      WEBHOOK_RETRY_DELAYS: Array.from({ length: 30 }, () => '200ms').join(','),
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    return service;
  };

  before(async () => {
    receiver = await WebhookReceiver.start();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-webhook-kill-'));
  });
  after(async () => {
    await killAll();
    await receiver.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no event and sends each again only with the same webhook-id and body', async () => {
    const first = await start();
    const endpoint = await call(first, 'POST', '/v1/webhooks', {
      url: receiver.url('/kill'),
      events: ['voucher.created', 'voucher.applied'],
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).to.equal(201);
    // while the first process lives: every other answer is a 500, the rest slow 200s
    receiver.answer('/kill', (_r, attempt) => (attempt % 2 === 1 ? 500 : { slowMs: 150, status: 200 }));
    const codes: string[] = [];
    for (let v = 0; v < VOUCHERS; v++) {
      const res = await call(first, 'POST', '/v1/vouchers', { code: `KILL${v}`, type: 'fixed', value: 100 });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      codes.push(res.body.code);
    }
    const applied = await Promise.all(
      Array.from({ length: APPLIES }, (_, i) =>
        call(first, 'POST', '/v1/vouchers/apply', {
          code: codes[i % VOUCHERS],
          order_id: `kill-order-${i}`,
          order: { value: 10_000 },
        }),
      ),
    );
    for (const res of applied) expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await until(() => receiver.at('/kill').length >= 3, 'deliveries under way');
    first.proc.child.kill('SIGKILL');
    await exitWithin(first.proc, 10_000);
    const acceptedBefore = new Set(receiver.accepted('/kill').map((r) => r.eventId)).size;
    expect(acceptedBefore, 'the kill came during the deliveries').to.be.below(VOUCHERS + APPLIES);

    receiver.answer('/kill', 200);
    await start();
    await until(
      () => new Set(receiver.accepted('/kill').map((r) => r.eventId)).size === VOUCHERS + APPLIES,
      'every event accepted after the restart',
      60_000,
    );

    const all = receiver.at('/kill');
    for (const r of all) expect(() => verify(endpoint.body.secret, r), r.eventId).to.not.throw();
    const bodies = new Map<string, string>();
    for (const r of all) {
      expect(bodies.get(r.eventId) ?? r.body, `${r.eventId} is always the same body`).to.equal(r.body);
      bodies.set(r.eventId, r.body);
    }
    const events = [...bodies.values()].map((b) => JSON.parse(b));
    expect(events.filter((e) => e.type === 'voucher.created')).to.have.length(VOUCHERS);
    expect(events.filter((e) => e.type === 'voucher.applied')).to.have.length(APPLIES);
    expect(new Set(events.map((e) => e.data.application?.id).filter(Boolean))).to.deep.equal(
      new Set(applied.map((a) => a.body.id)),
    );
    // per voucher, events were first accepted in their order: usage_count 0 (created), 1, 2, ...
    const firstAccepted = new Map<string, any>();
    for (const r of receiver.accepted('/kill')) if (!firstAccepted.has(r.eventId)) firstAccepted.set(r.eventId, r.json);
    const perVoucher = new Map<string, number[]>();
    for (const e of firstAccepted.values())
      perVoucher.set(e.data.id, [...(perVoucher.get(e.data.id) ?? []), e.data.usage_count]);
    expect(perVoucher.size).to.equal(VOUCHERS);
    for (const [voucherId, counts] of perVoucher)
      expect(counts, voucherId).to.deep.equal(Array.from({ length: APPLIES / VOUCHERS + 1 }, (_, i) => i));
  });
});
