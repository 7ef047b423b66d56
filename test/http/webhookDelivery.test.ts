/**
 * Webhook delivery end to end (decisions.md, Webhooks): a receiver on 127.0.0.1 (allowed with
 * WEBHOOK_ALLOWED_CIDRS=127.0.0.0/8) verifies EVERY request with the standardwebhooks package,
 * not with the service's own signing code. Retry delays are shortened by configuration.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import type { WebhookSettings } from '../../src/application/webhooks/settings.ts';
import { PAYLOADS } from '../../src/application/webhooks/deliveryStore.ts';
import { expireDueVouchers } from '../../src/application/vouchers.ts';
import type { Resolve } from '../../src/infrastructure/webhooks/httpSender.ts';
import { isoSeconds } from '../../src/domain/clock.ts';
import { applyBody, rollbackBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { PRODUCTION_KEY, TestService } from '../support/harness.ts';
import { until, verify, WebhookReceiver, type Received } from '../support/webhookReceiver.ts';

/** Real time plus an offset the test can move (standardwebhooks checks timestamps against real time). */
class OffsetClock extends FakeClock {
  private offset = 0;
  override now(): Date {
    return new Date(Date.now() + this.offset);
  }
  override advance(ms: number): void {
    this.offset += ms;
  }
}

const settings = (over: Partial<WebhookSettings> = {}): WebhookSettings => ({
  allowedCidrs: parseCidrs('127.0.0.0/8'),
  retryDelaysMs: [100, 150, 200, 250, 300, 350, 400, 450],
  timeoutMs: 400,
  ...over,
});

/** Every request of `path` verifies with the endpoint's secret (standardwebhooks). */
const expectAllVerified = (received: Received[], secret: string): void => {
  expect(received).to.not.be.empty;
  for (const r of received) {
    expect(() => verify(secret, r), `${r.eventId} verifies`).to.not.throw();
    expect(r.headers['content-type']).to.equal('application/json');
    expect(r.headers['user-agent']).to.match(/^voucher-service-webhooks\/\d+\.\d+\.\d+$/);
    expect(r.headers['webhook-id']).to.equal(r.json.id);
  }
};

const start = (over: Parameters<typeof TestService.start>[0] = {}) =>
  TestService.start({ clock: new OffsetClock(), webhooks: settings(), webhookHooks: { random: () => 0.5 }, ...over });

describe('webhook delivery', function () {
  this.timeout(30_000);
  let receiver: WebhookReceiver;
  let service: TestService;
  let n = 0;
  const code = (prefix: string) => `${prefix}_${++n}`;
  const register = async (url: string, events: string[] = ['*'], key?: string) => {
    const res = await service.post('/v1/webhooks', { url, events }, key ? { key } : undefined);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { id: string; secret: string };
  };
  const deliveriesOf = async (endpointId: string, query = '') =>
    (await service.get(`/v1/webhooks/${endpointId}/deliveries?limit=100${query}`)).body.data as any[];

  before(async () => {
    receiver = await WebhookReceiver.start();
    service = await start();
  });
  after(async () => {
    await service.stop();
    await receiver.stop();
  });
  afterEach(() => sinon.restore());

  it('sends each voucher event once, signed, in order, with the voucher as GET renders it at that event; nothing for a rejected command', async () => {
    const endpoint = await register(receiver.url('/life'));
    const voucher = await service.createVoucher(fixedVoucher(code('LIFE')));
    expect((await service.put(`/v1/vouchers/${voucher.id}`, { value: 250 })).status).to.equal(200);
    const applied = await service.post('/v1/vouchers/apply', applyBody(voucher.code, 'o-life-1'));
    expect(applied.status).to.equal(201);
    // rejected: a repeat of the order with another total, and an unknown voucher
    expect(
      (await service.post('/v1/vouchers/apply', applyBody(voucher.code, 'o-life-1', { value: 5 }))).status,
    ).to.equal(409);
    expect((await service.put('/v1/vouchers/v_NoSuchVoucher000001', { value: 1 })).status).to.equal(404);
    const rolledBack = await service.post(`/v1/vouchers/applications/${applied.body.id}/rollback`, rollbackBody());
    expect(rolledBack.status).to.equal(200);
    expect((await service.delete(`/v1/vouchers/${voucher.id}`)).status).to.equal(200);

    await until(() => receiver.accepted('/life').length >= 5, 'five events');
    const got = receiver.accepted('/life');
    expectAllVerified(got, endpoint.secret);
    expect(got.map((r) => r.json.type)).to.deep.equal([
      'voucher.created',
      'voucher.updated',
      'voucher.applied',
      'voucher.application_rolled_back',
      'voucher.deleted',
    ]);
    expect(new Set(got.map((r) => r.eventId)).size).to.equal(5);
    for (const r of got) {
      expect(r.json).to.include({ environment: 'sandbox' });
      expect(r.json.id).to.match(/^evt_/);
      expect(r.json.data.id).to.equal(voucher.id);
      expect(r.json.data).to.not.have.property('usage_history');
      expect(Buffer.byteLength(r.body)).to.be.below(20_000);
    }
    const [created, updated, appliedEvent, rolled, deleted] = got.map((r) => r.json);
    expect(created.data).to.deep.equal({ ...voucher });
    expect(updated.data).to.include({ value: 250, usage_count: 0 });
    expect(appliedEvent.data).to.include({ usage_count: 1 });
    expect(appliedEvent.data.application).to.deep.equal(applied.body);
    expect(rolled.data).to.include({ usage_count: 0 });
    expect(rolled.data.application).to.include({ id: applied.body.id, status: 'rolled_back' });
    expect(deleted.data).to.include({ status: 'inactive' });
    // the voucher now: the webhook of the update kept the value it had then
    expect((await service.get(`/v1/vouchers/${voucher.id}`)).body.status).to.equal('inactive');

    const listed = await deliveriesOf(endpoint.id);
    expect(listed.map((d) => d.event_type)).to.deep.equal(got.map((r) => r.json.type).reverse());
    for (const d of listed) {
      expect(d.status).to.equal('succeeded');
      expect(d.attempts).to.have.length(1);
      expect(d.attempts[0].response_status).to.equal(200);
      expect(d.next_attempt_at).to.equal(null);
    }
  });

  it('keeps a body under 20 kB: a voucher with long product lists leaves them out and names them', async () => {
    const endpoint = await register(receiver.url('/large'), ['voucher.created']);
    const ids = (p: string) =>
      Array.from({ length: 1000 }, (_, i) => `${p}-${String(i).padStart(4, '0')}-${'x'.repeat(90)}`);
    const voucher = await service.createVoucher(
      fixedVoucher(code('LARGE'), { conditions: { product_ids: ids('in'), excluded_product_ids: ids('out') } }),
    );
    await until(() => receiver.accepted('/large').length === 1, 'the event');
    const [r] = receiver.accepted('/large');
    expectAllVerified([r!], endpoint.secret);
    expect(Buffer.byteLength(r!.body)).to.be.below(20_000);
    expect(r!.json.data.id).to.equal(voucher.id);
    expect(r!.json.data.truncated).to.deep.equal(['conditions.product_ids', 'conditions.excluded_product_ids']);
    expect(r!.json.data.conditions).to.not.have.any.keys('product_ids', 'excluded_product_ids');
    // a small voucher is whole, without `truncated`
    expect(receiver.accepted('/life')[0]?.json.data ?? {}).to.not.have.property('truncated');
  });

  it('sends voucher.expired when valid_until passes without anyone touching the voucher', async () => {
    const endpoint = await register(receiver.url('/expired'), ['voucher.expired']);
    const until1s = isoSeconds(new Date(Date.now() + 1_000));
    const voucher = await service.createVoucher(fixedVoucher(code('EXP'), { conditions: { valid_until: until1s } }));
    await until(() => Date.now() > Date.parse(until1s) + 50, 'valid_until to pass');
    expect(await expireDueVouchers(service.sandbox)).to.equal(1); // what the housekeeping job runs
    await until(() => receiver.accepted('/expired').length === 1, 'voucher.expired');
    const [r] = receiver.accepted('/expired');
    expectAllVerified([r!], endpoint.secret);
    expect(r!.json).to.include({ type: 'voucher.expired' });
    expect(r!.json.data).to.include({ id: voucher.id, status: 'expired' });
  });

  it('a receiver that answers 500, then nothing, then 200 gets every event accepted exactly once, in order per voucher', async () => {
    const endpoint = await register(receiver.url('/down'));
    receiver.answer('/down', (_r, attempt) => (attempt === 1 ? 500 : attempt === 2 ? 'hang' : 200));
    const a = await service.createVoucher(fixedVoucher(code('DOWN_A')));
    await service.put(`/v1/vouchers/${a.id}`, { value: 300 });
    await service.put(`/v1/vouchers/${a.id}`, { value: 400 });
    const b = await service.createVoucher(fixedVoucher(code('DOWN_B')));
    await until(() => receiver.accepted('/down').length === 4, 'four events accepted', 20_000);

    const all = receiver.at('/down');
    expectAllVerified(all, endpoint.secret);
    const accepted = receiver.accepted('/down');
    expect(new Set(accepted.map((r) => r.eventId)).size).to.equal(4);
    expect(all.map((r) => r.answered ?? 'none')).to.include.members([500, 'none', 200]);
    // per voucher: no request for an event before the previous event of that voucher was accepted
    for (const voucherId of [a.id, b.id]) {
      const ofVoucher = all.filter((r) => r.voucherId === voucherId);
      const order = [...new Set(ofVoucher.map((r) => r.eventId))];
      for (let i = 1; i < order.length; i++) {
        const firstOfNext = ofVoucher.findIndex((r) => r.eventId === order[i]);
        const acceptedPrev = ofVoucher.findIndex((r) => r.eventId === order[i - 1] && r.answered === 200);
        expect(acceptedPrev, `${voucherId}: event ${i - 1} accepted before event ${i} is tried`).to.be.within(
          0,
          firstOfNext - 1,
        );
      }
    }
    expect(accepted.filter((r) => r.voucherId === a.id).map((r) => r.json.data.value)).to.deep.equal([100, 300, 400]);
    // the receiver has answered the last attempt; its outcome is stored a moment later
    await until(
      async () => (await deliveriesOf(endpoint.id)).every((d: { status: string }) => d.status === 'succeeded'),
      'every outcome recorded',
    );
    const listed = await deliveriesOf(endpoint.id);
    for (const d of listed) {
      expect(d.status).to.equal('succeeded');
      expect(d.attempts.map((t: any) => t.response_status ?? 'error')).to.deep.equal([500, 'error', 200]);
      expect(d.attempts[1].error).to.match(/timeout/);
    }
  });

  it('a voucher whose deliveries keep failing never holds back another voucher', async () => {
    const endpoint = await register(receiver.url('/stuck'));
    const stuck: { id?: string } = {}; // until A's id is known, only A's events can arrive: 500 too
    receiver.answer('/stuck', (r) => (stuck.id === undefined || r.voucherId === stuck.id ? 500 : 200));
    const a = await service.createVoucher(fixedVoucher(code('STUCK_A')));
    stuck.id = a.id;
    await service.put(`/v1/vouchers/${a.id}`, { value: 300 });
    const b = await service.createVoucher(fixedVoucher(code('STUCK_B')));
    await service.put(`/v1/vouchers/${b.id}`, { value: 300 });
    await until(() => receiver.accepted('/stuck').length === 2, "the other voucher's events");
    expect(receiver.accepted('/stuck').map((r) => r.voucherId)).to.deep.equal([b.id, b.id]);
    const ofA = receiver.at('/stuck').filter((r) => r.voucherId === a.id);
    expect(new Set(ofA.map((r) => r.json.type))).to.deep.equal(new Set(['voucher.created'])); // the update waits
    const waiting = (await deliveriesOf(endpoint.id)).find(
      (d) => d.event_type === 'voucher.updated' && d.status === 'pending' && d.attempts.length === 0,
    );
    expect(waiting, 'the update of the stuck voucher waits').to.not.equal(undefined);
    expect(waiting.next_attempt_at).to.equal(null);
    expectAllVerified(receiver.at('/stuck'), endpoint.secret);
    await service.delete(`/v1/webhooks/${endpoint.id}`);
  });

  it('makes at most 8 attempts at once to one endpoint, different vouchers side by side', async () => {
    const other = await WebhookReceiver.start();
    try {
      const endpoint = await register(other.url('/busy'), ['voucher.created']);
      other.answer('/busy', { slowMs: 300, status: 200 });
      await Promise.all(Array.from({ length: 20 }, () => service.createVoucher(fixedVoucher(code('BUSY')))));
      await until(() => other.accepted('/busy').length === 20, 'twenty deliveries');
      expect(other.maxOpen).to.equal(8);
      expectAllVerified(other.accepted('/busy'), endpoint.secret);
      await service.delete(`/v1/webhooks/${endpoint.id}`);
    } finally {
      await other.stop();
    }
  });

  it('retries a receiver slower than the timeout, with the same webhook-id', async () => {
    const endpoint = await register(receiver.url('/slow'), ['voucher.created']);
    receiver.answer('/slow', (_r, attempt) => (attempt === 1 ? { slowMs: 1_000, status: 200 } : 200));
    await service.createVoucher(fixedVoucher(code('SLOW')));
    await until(() => receiver.at('/slow').length === 2, 'the retry');
    await until(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'succeeded', 'success recorded');
    const [first, second] = receiver.at('/slow');
    expect(first!.eventId).to.equal(second!.eventId);
    expectAllVerified([first!, second!], endpoint.secret);
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.attempts[0].error).to.match(/timeout: no answer within 400 ms/);
    expect(delivery.attempts[1].response_status).to.equal(200);
  });

  it('follows no redirect: a 302 is a failed attempt and its Location is never connected to', async () => {
    const other = await WebhookReceiver.start();
    try {
      const endpoint = await register(receiver.url('/redirect'), ['voucher.created']);
      receiver.answer('/redirect', { status: 302, headers: { location: other.url('/elsewhere') } });
      await service.createVoucher(fixedVoucher(code('REDIR')));
      await until(() => receiver.at('/redirect').length >= 2, 'a retry of the redirect');
      expect(other.connections).to.equal(0);
      const [delivery] = await deliveriesOf(endpoint.id);
      expect(delivery.attempts[0].response_status).to.equal(302);
      await service.delete(`/v1/webhooks/${endpoint.id}`);
    } finally {
      await other.stop();
    }
  });

  it('a deleted endpoint gets no further attempts', async () => {
    const endpoint = await register(receiver.url('/deleted'), ['voucher.created']);
    receiver.answer('/deleted', 500);
    await service.createVoucher(fixedVoucher(code('DEL')));
    await until(() => receiver.at('/deleted').length >= 1, 'a first attempt');
    expect((await service.delete(`/v1/webhooks/${endpoint.id}`)).status).to.equal(200);
    const store = service.sandbox.webhooks.deliveries!;
    await until(
      async () => (await store.count({ endpoint_id: endpoint.id, status: 'pending' })) === 0,
      'no delivery pending',
    );
    const seen = receiver.at('/deleted').length;
    const [doc] = await store.find({ endpoint_id: endpoint.id }, { skip: 0, limit: 1 });
    expect(doc!.status).to.equal('failed');
    expect(doc!.failure_reason).to.equal('endpoint deleted');
    expect(doc!.attempts.length).to.be.at.most(seen);
    expect(receiver.at('/deleted').length).to.equal(seen);
  });

  it('fails a delivery after the schedule, and recover sends it again with the same webhook-id', async () => {
    const short = await start({ webhooks: settings({ retryDelaysMs: [50, 50] }) });
    try {
      const res = await short.post('/v1/webhooks', { url: receiver.url('/recover'), events: ['voucher.created'] });
      const endpoint = res.body;
      receiver.answer('/recover', 500);
      const before = new Date(Date.now() - 1_000).toISOString();
      await short.createVoucher(fixedVoucher(code('RECOVER')));
      const failed = async () =>
        (await short.get(`/v1/webhooks/${endpoint.id}/deliveries?status=failed`)).body.data as any[];
      await until(async () => (await failed()).length === 1, 'the delivery to fail');
      const [delivery] = await failed();
      expect(delivery.attempts.map((a: any) => a.response_status)).to.deep.equal([500, 500, 500]);
      expect(receiver.at('/recover')).to.have.length(3);

      receiver.answer('/recover', 200);
      const recovered = await short.post(`/v1/webhooks/${endpoint.id}/recover`, { since: before });
      expect(recovered.status, JSON.stringify(recovered.body)).to.equal(202);
      expect(recovered.body).to.deep.equal({ recovered: 1 });
      await until(() => receiver.accepted('/recover').length === 1, 'the recovered delivery');
      const all = receiver.at('/recover');
      expect(new Set(all.map((r) => r.eventId)).size).to.equal(1);
      expectAllVerified(all, endpoint.secret);
      const after = (await short.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data[0];
      expect(after.status).to.equal('succeeded');
      expect(after.attempts).to.have.length(4);

      // resend: one more attempt now, same webhook-id
      const resent = await short.post(`/v1/webhooks/${endpoint.id}/deliveries/${after.id}/resend`);
      expect(resent.status).to.equal(202);
      await until(() => receiver.accepted('/recover').length === 2, 'the resend');
      expect(receiver.accepted('/recover')[1]!.eventId).to.equal(all[0]!.eventId);
      const errors = [
        await short.post(`/v1/webhooks/${endpoint.id}/recover`, { since: 'yesterday' }),
        await short.post(`/v1/webhooks/${endpoint.id}/recover`, {}),
      ];
      for (const e of errors) expect([e.status, e.body.error.details[0].field]).to.deep.equal([400, 'since']);
      const unknown = await short.post(`/v1/webhooks/${endpoint.id}/deliveries/msg_nosuch/resend`);
      expect([unknown.status, unknown.body.error.code]).to.deep.equal([404, 'WEBHOOK_DELIVERY_NOT_FOUND']);
    } finally {
      await short.stop();
    }
  });

  it('sends a webhook.test event on request', async () => {
    const endpoint = await register(receiver.url('/test'), ['voucher.applied']);
    const res = await service.post(`/v1/webhooks/${endpoint.id}/test`);
    expect(res.status).to.equal(202);
    expect(res.body.event_type).to.equal('webhook.test');
    await until(() => receiver.accepted('/test').length === 1, 'the test event');
    const [r] = receiver.accepted('/test');
    expectAllVerified([r!], endpoint.secret);
    expect(r!.json).to.include({ type: 'webhook.test', environment: 'sandbox' });
    expect(r!.json.data).to.deep.equal({ webhook_id: endpoint.id });
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const endpoint = await register(receiver.url('/rotate'), ['voucher.created']);
    const { secret } = (await service.post(`/v1/webhooks/${endpoint.id}/rotate-secret`)).body;
    await service.createVoucher(fixedVoucher(code('ROT1')));
    await until(() => receiver.accepted('/rotate').length === 1, 'the first event');
    const [during] = receiver.accepted('/rotate');
    expect(String(during!.headers['webhook-signature']).split(' ')).to.have.length(2);
    expectAllVerified([during!], endpoint.secret); // the old secret still verifies
    expectAllVerified([during!], secret); // and the new one

    service.clock.advance(24 * 3_600_000 + 1_000);
    await service.createVoucher(fixedVoucher(code('ROT2')));
    await until(() => receiver.accepted('/rotate').length === 2, 'the second event');
    const later = receiver.accepted('/rotate')[1]!;
    expect(String(later.headers['webhook-signature']).split(' ')).to.have.length(1);
    // the timestamp is 24 h ahead of real time: verify as of that moment
    sinon.stub(Date, 'now').returns(Number(later.headers['webhook-timestamp']) * 1000);
    expect(() => verify(secret, later)).to.not.throw();
    expect(() => verify(endpoint.secret, later)).to.throw(/signature/i);
    sinon.restore();
    service.clock.advance(-(24 * 3_600_000 + 1_000));
  });

  it('disables an endpoint that answers 410', async () => {
    const endpoint = await register(receiver.url('/gone'), ['voucher.created']);
    receiver.answer('/gone', 410);
    await service.createVoucher(fixedVoucher(code('GONE')));
    await until(async () => (await service.get(`/v1/webhooks/${endpoint.id}`)).body.status === 'disabled', 'disabled');
    const got = (await service.get(`/v1/webhooks/${endpoint.id}`)).body;
    expect(got.disabled_reason).to.match(/410/);
    expect(receiver.at('/gone')).to.have.length(1);
    expect((await deliveriesOf(endpoint.id))[0].status).to.equal('failed');
  });

  it('disables an endpoint whose deliveries have all failed for 5 days', async () => {
    const endpoint = await register(receiver.url('/failing'), ['voucher.created']);
    receiver.answer('/failing', 500);
    await service.createVoucher(fixedVoucher(code('FAILING')));
    await until(() => receiver.at('/failing').length >= 2, 'failed attempts');
    expect((await service.get(`/v1/webhooks/${endpoint.id}`)).body.status).to.equal('enabled');
    service.clock.advance(5 * 24 * 3_600_000);
    try {
      await until(
        async () => (await service.get(`/v1/webhooks/${endpoint.id}`)).body.status === 'disabled',
        'disabled',
      );
      expect((await service.get(`/v1/webhooks/${endpoint.id}`)).body.disabled_reason).to.match(/failed for 5 days/);
      // enabled again: the 5 days start again from there, so the next failures do not disable it at once
      expect((await service.patch(`/v1/webhooks/${endpoint.id}`, { status: 'enabled' })).status).to.equal(200);
      const seen = receiver.at('/failing').length;
      await service.createVoucher(fixedVoucher(code('FAILING')));
      await until(() => receiver.at('/failing').length >= seen + 2, 'failures after re-enabling');
      expect((await service.get(`/v1/webhooks/${endpoint.id}`)).body.status).to.equal('enabled');
    } finally {
      service.clock.advance(-5 * 24 * 3_600_000);
    }
  });

  it('a sandbox endpoint never receives a production event', async () => {
    const sandbox = await register(receiver.url('/sandbox-only'));
    const production = (
      await service.post(
        '/v1/webhooks',
        { url: 'https://production.example.com/hook', events: ['*'] },
        { key: PRODUCTION_KEY },
      )
    ).body;
    const voucher = await service.createVoucher(fixedVoucher(code('PROD')), { key: PRODUCTION_KEY });
    const head = await service.production.events.headPosition();
    expect(await service.production.webhooks.publisher!.waitFor(head)).to.equal(true);
    const prodStore = service.production.webhooks.deliveries!;
    const made = await prodStore.find({ endpoint_id: production.id }, { skip: 0, limit: 10 });
    // the body is stored once for the event, apart from its delivery
    expect(made[0]!.payload).to.equal(undefined);
    expect(await prodStore.store.count(PAYLOADS)).to.equal(1);
    const bodies = await prodStore.payloads(made);
    expect(made.map((d) => JSON.parse(bodies.get(d.id)!).data.id)).to.deep.equal([voucher.id]);
    expect(JSON.parse(bodies.get(made[0]!.id)!).environment).to.equal('production');
    const sandboxHead = await service.sandbox.events.headPosition();
    expect(await service.sandbox.webhooks.publisher!.waitFor(sandboxHead)).to.equal(true);
    expect(await service.sandbox.webhooks.deliveries!.count({ endpoint_id: sandbox.id })).to.equal(0);
    expect(receiver.at('/sandbox-only')).to.have.length(0);
  });
});

describe('webhook targets', function () {
  this.timeout(30_000);
  let receiver: WebhookReceiver;
  let service: TestService;
  /** Names this test resolves itself; anything else does not resolve. */
  const names: Record<string, string> = {};
  const resolve: Resolve = async (hostname) => {
    const address = names[hostname];
    if (!address) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
  const attemptsOf = async (endpointId: string) => {
    const store = service.sandbox.webhooks.deliveries!;
    const [doc] = await store.find({ endpoint_id: endpointId }, { skip: 0, limit: 1 });
    return doc?.attempts ?? [];
  };

  before(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterEach(async () => {
    await service?.stop();
  });
  after(async () => {
    await receiver.stop();
  });

  it('never connects to loopback without the allow-list, or to a name that resolves to a private address', async () => {
    names['loop.test'] = '127.0.0.1';
    names['private.test'] = '10.0.0.5';
    names['mapped.test'] = '::ffff:192.168.1.1';
    service = await start({ webhooks: settings({ allowedCidrs: [], retryDelaysMs: [50] }), webhookHooks: { resolve } });
    const ids: string[] = [];
    for (const host of ['loop.test', 'private.test', 'mapped.test', 'localhost']) {
      const res = await service.post('/v1/webhooks', { url: receiver.url('/refused', host), events: ['*'] });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      ids.push(res.body.id);
    }
    await service.createVoucher(fixedVoucher('REFUSED_1'));
    for (const id of ids) await until(async () => (await attemptsOf(id)).length === 2, `two attempts of ${id}`);
    const errors = await Promise.all(ids.map(async (id) => (await attemptsOf(id)).map((a) => a.error)));
    expect(errors[0]![0]).to.match(/refused target: loop\.test .*127\.0\.0\.1 \(loopback\)/);
    expect(errors[1]![0]).to.match(/10\.0\.0\.5 \(private\)/);
    expect(errors[2]![0]).to.match(/::ffff:192\.168\.1\.1 \(private\)/);
    expect(errors[3]![0]).to.match(/cannot resolve localhost|refused target/);
    expect(receiver.connections).to.equal(0);
  });

  it('resolves the name at every attempt and connects to the address it checked', async () => {
    names['pinned.test'] = '127.0.0.1';
    service = await start({ webhookHooks: { resolve, random: () => 0.5 } });
    const res = await service.post('/v1/webhooks', { url: receiver.url('/pinned', 'pinned.test'), events: ['*'] });
    await service.createVoucher(fixedVoucher('PINNED_1'));
    await until(() => receiver.accepted('/pinned').length === 1, 'delivery through the vetted address');
    expect(receiver.accepted('/pinned')[0]!.headers.host).to.equal(`pinned.test:${receiver.port}`);
    names['pinned.test'] = '10.1.1.1'; // the name now points at a private address
    await service.createVoucher(fixedVoucher('PINNED_2'));
    await until(async () => {
      const store = service.sandbox.webhooks.deliveries!;
      const docs = await store.find({ endpoint_id: res.body.id }, { skip: 0, limit: 1 });
      return (
        (docs[0]?.attempts.length ?? 0) >= 1 &&
        docs[0]!.event_type === 'voucher.created' &&
        docs[0]!.attempts[0]!.error !== undefined
      );
    }, 'the refused attempt');
    expect(receiver.at('/pinned')).to.have.length(1);
  });
});

describe('webhook delivery across a restart', function () {
  this.timeout(30_000);

  it('neither loses nor duplicates: an event appended while the publisher was behind is delivered after the restart; a repeated attempt has the same webhook-id', async () => {
    const receiver = await WebhookReceiver.start();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-webhooks-'));
    let service = await start({ dataDir });
    try {
      const endpoint = (await service.post('/v1/webhooks', { url: receiver.url('/restart'), events: ['*'] })).body;
      receiver.answer('/restart', 500);
      const a = await service.createVoucher(fixedVoucher('RESTART_A'));
      await until(() => receiver.at('/restart').length >= 1, 'a failed attempt');
      // the publisher stops: the next event is in the log only, as if the process died after the append
      await service.sandbox.webhooks.publisher!.stop();
      await service.put(`/v1/vouchers/${a.id}`, { value: 999 });
      await service.stop(true);
      const beforeRestart = new Set(receiver.at('/restart').map((r) => r.eventId));
      expect(beforeRestart.size).to.equal(1);

      receiver.answer('/restart', 200);
      service = await start({ dataDir });
      await until(() => receiver.accepted('/restart').length === 2, 'both events after the restart');
      const accepted = receiver.accepted('/restart');
      expect(accepted.map((r) => r.json.type)).to.deep.equal(['voucher.created', 'voucher.updated']);
      expect(accepted[0]!.eventId).to.equal([...beforeRestart][0]); // the retried attempt: same webhook-id
      expect(accepted[1]!.json.data.value).to.equal(999);
      expectAllVerified(receiver.at('/restart'), endpoint.secret);
      const store = service.sandbox.webhooks.deliveries!;
      expect(await store.count({ endpoint_id: endpoint.id })).to.equal(2);
      // nothing else arrives: every delivery is final
      expect(await store.count({ endpoint_id: endpoint.id, status: 'pending' })).to.equal(0);
      expect(new Set(receiver.accepted('/restart').map((r) => r.eventId)).size).to.equal(2);
    } finally {
      await service.stop();
      await receiver.stop();
    }
  });
});
