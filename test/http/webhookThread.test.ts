/**
 * Webhook delivery on its worker thread (the service's default, without test seams): the
 * publisher and dispatcher run on their own connections and the API reaches them by messages.
 * Every request is verified with the standardwebhooks package; the receiver listens on 127.0.0.1.
 */
import { expect } from 'chai';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { WebhookThread } from '../../src/infrastructure/webhooks/webhookThread.ts';
import { applyBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { PRODUCTION_KEY, TestService } from '../support/harness.ts';
import { until, verify, WebhookReceiver } from '../support/webhookReceiver.ts';

const APPLIES = 6;

describe('webhook delivery on its thread', function () {
  this.timeout(60_000);
  let receiver: WebhookReceiver;
  let service: TestService;
  const register = async (url: string, events: string[], key?: string) => {
    const res = await service.post('/v1/webhooks', { url, events }, key ? { key } : undefined);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string; secret: string };
  };

  before(async () => {
    receiver = await WebhookReceiver.start();
    service = await TestService.start({
      webhooks: { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: [100, 100, 100, 100, 100], timeoutMs: 1_000 },
      webhookDelivery: 'thread',
    });
  });
  after(async () => {
    await service.stop();
    await receiver.stop();
  });

  it('runs on the thread, not on the main thread', () => {
    expect(service.sandbox.webhooks.publisher).to.be.an.instanceOf(WebhookThread);
    expect(service.production.webhooks.publisher).to.be.an.instanceOf(WebhookThread);
  });

  it("delivers every event signed, each voucher's in order through retries, only to its environment", async () => {
    const endpoint = await register(receiver.url('/order'), ['voucher.created', 'voucher.applied']);
    receiver.answer('/order', (_r, attempt) => (attempt % 3 === 1 ? 500 : 200));
    const vouchers = [
      await service.createVoucher(fixedVoucher('THREAD_A')),
      await service.createVoucher(fixedVoucher('THREAD_B')),
    ];
    const applied = await Promise.all(
      Array.from({ length: APPLIES }, (_, i) =>
        service.post('/v1/vouchers/apply', applyBody(vouchers[i % 2]!.code, `thread-order-${i}`)),
      ),
    );
    for (const res of applied) expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const events = 2 + APPLIES;
    await until(() => new Set(receiver.accepted('/order').map((r) => r.eventId)).size === events, 'every event');
    const all = receiver.at('/order');
    for (const r of all) expect(() => verify(endpoint.secret, r), r.eventId).to.not.throw();
    const firstAccepted = new Map<string, any>();
    for (const r of receiver.accepted('/order'))
      if (!firstAccepted.has(r.eventId)) firstAccepted.set(r.eventId, r.json);
    const perVoucher = new Map<string, number[]>();
    for (const e of firstAccepted.values())
      perVoucher.set(e.data.id, [...(perVoucher.get(e.data.id) ?? []), e.data.usage_count]);
    for (const voucher of vouchers) expect(perVoucher.get(voucher.id), voucher.code).to.deep.equal([0, 1, 2, 3]);
    expect([...perVoucher.keys()].sort()).to.deep.equal(vouchers.map((v) => v.id).sort());
    const listed = (await service.get(`/v1/webhooks/${endpoint.id}/deliveries?limit=100`)).body;
    expect(listed.total).to.equal(events);

    // a production event goes to production's endpoint only
    const production = await register('https://production.example.com/hook', ['voucher.created'], PRODUCTION_KEY);
    const prodVoucher = await service.createVoucher(fixedVoucher('THREAD_P'), { key: PRODUCTION_KEY });
    expect(await service.production.webhooks.publisher!.waitFor(await service.production.events.headPosition())).to.be
      .true;
    const made = await service.production.webhooks.deliveries!.find(
      { endpoint_id: production.id },
      { skip: 0, limit: 10 },
    );
    const stored = await service.production.webhooks.deliveries!.payloads(made);
    const bodies = made.map((d) => JSON.parse(stored.get(d.id)!));
    expect(bodies.map((b) => [b.data.id, b.environment])).to.deep.equal([[prodVoucher.id, 'production']]);
    expect(await service.sandbox.webhooks.publisher!.waitFor(await service.sandbox.events.headPosition())).to.be.true;
    expect(await service.sandbox.webhooks.deliveries!.count({ endpoint_id: endpoint.id })).to.equal(events);
  });

  it('resends, sends a test event and disables an endpoint that answers 410, across threads', async () => {
    const endpoint = await register(receiver.url('/calls'), ['voucher.created']);
    await service.createVoucher(fixedVoucher('THREAD_C'));
    await until(() => receiver.accepted('/calls').length === 1, 'the first delivery');
    const [delivery] = (await service.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
    const resent = await service.post(`/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/resend`);
    expect(resent.status, JSON.stringify(resent.body)).to.equal(202);
    await until(() => receiver.accepted('/calls').length === 2, 'the resend');
    expect(receiver.accepted('/calls')[1]!.eventId).to.equal(receiver.accepted('/calls')[0]!.eventId);
    const unknown = await service.post(`/v1/webhooks/${endpoint.id}/deliveries/msg_nosuch/resend`);
    expect([unknown.status, unknown.body.error.code]).to.deep.equal([404, 'WEBHOOK_DELIVERY_NOT_FOUND']);

    const test = await service.post(`/v1/webhooks/${endpoint.id}/test`);
    expect(test.status).to.equal(202);
    await until(() => receiver.accepted('/calls').length === 3, 'the test event');
    expect(receiver.accepted('/calls')[2]!.json.type).to.equal('webhook.test');

    receiver.answer('/calls', 410);
    await service.createVoucher(fixedVoucher('THREAD_D'));
    await until(async () => (await service.get(`/v1/webhooks/${endpoint.id}`)).body.status === 'disabled', 'disabled');
    expect((await service.get(`/v1/webhooks/${endpoint.id}`)).body.disabled_reason).to.match(/410/);
  });
});
