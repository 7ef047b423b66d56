/**
 * Webhook delivery on its worker thread (the service's default, without test seams): the
 * publisher and dispatcher run on their own connections and the API reaches them by messages.
 * Every request is verified with the standardwebhooks package; the receiver listens on 127.0.0.1.
 */
import { expect } from 'chai';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { WEBHOOK_THREAD_RESOURCE_LIMITS, WebhookThread } from '../../src/infrastructure/webhooks/webhookThread.ts';
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

  it('runs with a young generation of 32 MB, not the 4 MB of the other worker threads (decision 096)', () => {
    for (const environment of [service.sandbox, service.production]) {
      const thread = environment.webhooks.publisher as WebhookThread;
      expect(thread.resourceLimits.maxYoungGenerationSizeMb).to.equal(
        WEBHOOK_THREAD_RESOURCE_LIMITS.maxYoungGenerationSizeMb,
      );
    }
    expect(WEBHOOK_THREAD_RESOURCE_LIMITS.maxYoungGenerationSizeMb).to.equal(32);
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
    // a batch's first attempts go before it is stored (decision 083): the list has it once it is
    let delivery: { id: string } | undefined;
    await until(async () => {
      [delivery] = (await service.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
      return delivery !== undefined;
    }, 'the delivery stored');
    const resent = await service.post(`/v1/webhooks/${endpoint.id}/deliveries/${delivery!.id}/resend`);
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

describe('commits handed to the webhook thread only while an endpoint is enabled', function () {
  this.timeout(60_000);
  let receiver: WebhookReceiver;
  let service: TestService;
  /** The `committed` messages the main thread posted to the sandbox's webhook thread. */
  let handed: number;

  before(async () => {
    receiver = await WebhookReceiver.start();
    service = await TestService.start({
      webhooks: { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: [100, 100], timeoutMs: 1_000 },
      webhookDelivery: 'thread',
    });
    const thread = (service.sandbox.webhooks.publisher as unknown as { thread: { post(message: unknown): boolean } })
      .thread;
    const post = thread.post.bind(thread);
    handed = 0;
    thread.post = (message) => {
      if ((message as { type: string }).type === 'committed') handed += 1;
      return post(message);
    };
  });
  after(async () => {
    await service.stop();
    await receiver.stop();
  });

  const caughtUp = async () =>
    expect(await service.sandbox.webhooks.publisher!.waitFor(await service.sandbox.events.headPosition(), 10_000)).to.be
      .true;
  const apply = async (code: string, order: string) => {
    const res = await service.post('/v1/vouchers/apply', applyBody(code, order));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
  };

  const subscribed = () => (service.sandbox.webhooks.publisher as unknown as { subscribed: boolean }).subscribed;

  it('hands over no commit without an enabled endpoint, and the publisher still reads every event', async () => {
    await until(() => !subscribed(), 'the started thread says no endpoint is enabled');
    const voucher = await service.createVoucher(fixedVoucher('HANDOFF_A'));
    for (let i = 0; i < 3; i++) await apply(voucher.code, `handoff-none-${i}`);
    await caughtUp(); // from the store: nothing was handed over
    expect(handed).to.equal(0);
  });

  it('hands over the commit that enables an endpoint, then every commit, and delivers what follows', async () => {
    const res = await service.post('/v1/webhooks', { url: receiver.url('/handoff'), events: ['voucher.applied'] });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const endpoint = res.body as { id: string; secret: string };
    expect(handed).to.equal(1); // the endpoint's own commit
    await until(() => subscribed(), 'the thread says an endpoint is enabled');
    const voucher = await service.createVoucher(fixedVoucher('HANDOFF_B'));
    const created = handed;
    expect(created).to.be.above(1); // the voucher's commits
    await apply(voucher.code, 'handoff-some-1');
    expect(handed).to.equal(created + 1);
    await until(() => receiver.accepted('/handoff').length === 1, 'the delivery');
    expect(() => verify(endpoint.secret, receiver.accepted('/handoff')[0]!)).to.not.throw();

    // disabled: commits are no longer handed over once the thread says so
    const disabled = await service.patch(`/v1/webhooks/${endpoint.id}`, { status: 'disabled' });
    expect(disabled.status, JSON.stringify(disabled.body)).to.equal(200);
    await until(() => !subscribed(), 'the thread says no endpoint is enabled');
    const before = handed;
    await apply(voucher.code, 'handoff-none-after');
    await caughtUp();
    expect(handed).to.equal(before);
    expect(receiver.accepted('/handoff')).to.have.length(1);
  });
});
