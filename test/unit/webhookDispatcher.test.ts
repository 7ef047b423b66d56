/** The dispatcher on a real deliveries store (SQLite), with a sender double: backlogs, recording outcomes, event bodies stored once. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import type { WriteBatch } from '../../src/core/readStore.ts';
import {
  DELIVERIES,
  DeliveryStore,
  ENDPOINTS,
  PAYLOADS,
  type DeliveryDoc,
  type PayloadDoc,
} from '../../src/application/webhooks/deliveryStore.ts';
import { localDeliveryControl } from '../../src/application/webhooks/deliveries.ts';
import { WebhookDispatcher } from '../../src/application/webhooks/dispatcher.ts';
import type { SendRequest, SendResult } from '../../src/domain/webhooks/delivery.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { endpointCopy } from '../fixtures/webhooks.ts';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const endpoint = (id: string) => endpointCopy(id);
/** Delivery `seq` of voucher `voucher` to `endpointId`: due at T0, or waiting behind an earlier one of its voucher. */
const delivery = (endpointId: string, voucher: string, seq: number, due: boolean): DeliveryDoc => ({
  id: `msg_${endpointId}_${seq}`,
  endpoint_id: endpointId,
  event_id: `evt_${seq}`,
  event_type: 'voucher.applied',
  order_key: voucher,
  seq,
  payload: JSON.stringify({ id: `evt_${seq}`, voucher }),
  status: 'pending',
  next_attempt_at: due ? T0 : null,
  attempts: [],
  created_at: '2026-03-01T00:00:00Z',
  created_ms: T0,
});

/** Delivery `seq` to `endpointId` in the stored shape: the body is its event's PAYLOADS document. */
const lean = (endpointId: string, voucher: string, seq: number, due: boolean): DeliveryDoc => {
  const { payload: _body, ...rest } = delivery(endpointId, voucher, seq, due);
  return rest;
};
/** The body of event `seq`, naming its deliveries to `endpoints`. */
const body = (seq: number, endpoints: string[]): PayloadDoc => ({
  id: `evt_${seq}`,
  payload: JSON.stringify({ id: `evt_${seq}`, stored: 'once' }),
  deliveries: endpoints.map((e) => `msg_${e}_${seq}`),
});

/** Resolves once `done()` holds, checked every 5 ms; fails after `ms`. */
const until = async (done: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('webhook dispatcher', () => {
  let dir: string;
  let store: SqliteReadStore;
  let deliveries: DeliveryStore;
  let dispatcher: WebhookDispatcher | undefined;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-dispatcher-'));
    store = SqliteReadStore.open(path.join(dir, 'webhooks.db'));
    deliveries = new DeliveryStore(new SqliteDeliveries(store));
    await deliveries.start();
  });
  afterEach(async () => {
    await dispatcher?.stop();
    dispatcher = undefined;
    sinon.restore();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = (sender: (request: SendRequest) => Promise<SendResult>) => {
    dispatcher = new WebhookDispatcher({
      deliveries,
      clock: { now: () => new Date(T0 + 1_000) },
      sender,
      settings: { allowedCidrs: [], retryDelaysMs: [60_000], timeoutMs: 10_000 },
      version: 'test',
      disable: async () => {},
    });
    dispatcher.start();
  };

  it('reads a backlog of due deliveries larger than one read of the store, up to the last', async () => {
    const count = 1_300; // more than two reads of 500
    await deliveries.write({
      upserts: [
        { collection: ENDPOINTS, doc: endpoint('we_a') },
        ...Array.from({ length: count }, (_, i) => ({
          collection: DELIVERIES,
          doc: delivery('we_a', `v${i}`, i + 1, true),
        })),
      ],
    });
    const sent = new Set<string>();
    start(async (request) => {
      sent.add(request.headers['webhook-id']!);
      return { status: 204, durationMs: 1 };
    });
    await until(() => sent.size === count, 20_000, `${count} deliveries, each once`);
    await until(async () => (await deliveries.count({ status: 'succeeded' })) === count, 10_000, 'every outcome');
  });

  it('records the outcomes of attempts answered together in one write, and releases each voucher’s next one after it', async () => {
    const vouchers = 8; // the attempts one endpoint may have in flight
    await deliveries.write({
      upserts: [
        { collection: ENDPOINTS, doc: endpoint('we_a') },
        ...Array.from({ length: vouchers }, (_, v) => [
          { collection: DELIVERIES, doc: delivery('we_a', `v${v}`, v + 1, true) },
          { collection: DELIVERIES, doc: delivery('we_a', `v${v}`, vouchers + v + 1, false) },
        ]).flat(),
      ],
    });
    const writes = sinon.spy(deliveries.storage, 'write');
    const held: Array<() => void> = [];
    const sent: string[] = [];
    /** For each send of a voucher's second delivery: was its first one already recorded as succeeded? */
    const firstRecorded: boolean[] = [];
    start(async (request) => {
      const seq = Number(request.headers['webhook-id']!.slice('evt_'.length));
      sent.push(String(seq));
      if (seq > vouchers)
        firstRecorded.push((await deliveries.get(`msg_we_a_${seq - vouchers}`))?.status === 'succeeded');
      await new Promise<void>((resolve) => held.push(resolve));
      return { status: 204, durationMs: 1 };
    });
    await until(() => held.length === vouchers, 10_000, 'the first attempts');
    for (const answer of held.splice(0)) answer(); // every answer in the same turn of the event loop
    await until(() => held.length === vouchers, 10_000, 'the second attempts');
    for (const answer of held.splice(0)) answer();

    const succeededIn = (batch: WriteBatch) =>
      (batch.upserts ?? []).filter((u) => u.collection === DELIVERIES && u.doc.status === 'succeeded').length;
    const recordings = writes.getCalls().map((call) => call.args[0] as WriteBatch);
    expect(recordings.map(succeededIn)).to.include(vouchers); // the first eight outcomes in one write
    expect(firstRecorded).to.deep.equal(Array(vouchers).fill(true));
    await until(
      async () => (await deliveries.count({ status: 'succeeded' })) === 2 * vouchers,
      10_000,
      'every outcome',
    );
  });

  it('makes the attempt a resend asks for even when the resend comes while an attempt is under way', async () => {
    await deliveries.write({
      upserts: [
        { collection: ENDPOINTS, doc: endpoint('we_a') },
        { collection: DELIVERIES, doc: delivery('we_a', 'v1', 1, true) },
      ],
    });
    const answers: Array<(result: SendResult) => void> = [];
    start(() => new Promise<SendResult>((resolve) => answers.push(resolve)));
    await until(() => answers.length === 1, 2_000, 'the first attempt');
    // the API's resend while the first attempt waits for its answer
    const control = localDeliveryControl(deliveries, dispatcher!);
    expect(await control.resend('we_a', 'msg_we_a_1', T0 + 1_000)).to.not.equal(null);
    answers[0]!({ status: 204, durationMs: 1 });
    await until(() => answers.length === 2, 2_000, 'the attempt of the resend');
    answers[1]!({ status: 204, durationMs: 1 });
    await until(async () => (await deliveries.get('msg_we_a_1'))?.status === 'succeeded', 2_000, 'the delivery to end');
    expect((await deliveries.get('msg_we_a_1'))!.attempts.map((a) => a.response_status)).to.deep.equal([204, 204]);
  });

  it('sends each delivery its event’s body, stored once, read once for every attempt a pass starts', async () => {
    const events = 20;
    const endpoints = ['we_a', 'we_b', 'we_c'];
    await deliveries.write({
      upserts: [
        ...endpoints.map((id) => ({ collection: ENDPOINTS, doc: endpoint(id) })),
        ...Array.from({ length: events }, (_, i) => [
          ...endpoints.map((e) => ({ collection: DELIVERIES, doc: lean(e, `v${i}`, i + 1, true) })),
          { collection: PAYLOADS, doc: body(i + 1, endpoints) },
        ]).flat(),
        // a delivery holding its body itself (test events; deliveries stored before bodies were kept apart)
        { collection: DELIVERIES, doc: delivery('we_a', 'v_old', 100, true) },
      ],
    });
    const reads = sinon.spy(store, 'getMany');
    const sent = new Map<string, string[]>();
    start(async (request) => {
      const id = request.headers['webhook-id']!;
      sent.set(id, [...(sent.get(id) ?? []), request.body]);
      return { status: 204, durationMs: 1 };
    });
    const total = events * endpoints.length + 1;
    await until(async () => (await deliveries.count({ status: 'succeeded' })) === total, 10_000, 'every delivery');
    for (let i = 1; i <= events; i += 1)
      expect(sent.get(`evt_${i}`)).to.deep.equal(Array(endpoints.length).fill(body(i, endpoints).payload));
    expect(sent.get('evt_100')).to.deep.equal([delivery('we_a', 'v_old', 100, true).payload]);
    const bodyReads = reads.getCalls().filter((call) => call.args[0] === PAYLOADS);
    // each pass starts up to 8 attempts per endpoint: one read for them all
    expect(bodyReads.length).to.be.within(1, Math.ceil(total / 8));
    expect((await deliveries.get('msg_we_a_1'))!.payload).to.equal(undefined);
  });

  it('fails a delivery whose event body is not stored, without an attempt', async () => {
    await deliveries.write({
      upserts: [
        { collection: ENDPOINTS, doc: endpoint('we_a') },
        { collection: DELIVERIES, doc: lean('we_a', 'v1', 1, true) },
      ],
    });
    const sender = sinon.fake.resolves({ status: 204, durationMs: 1 });
    start(sender);
    await until(async () => (await deliveries.get('msg_we_a_1'))!.status === 'failed', 10_000, 'the failure');
    expect(await deliveries.get('msg_we_a_1')).to.include({ failure_reason: 'event body missing' });
    expect(sender.callCount).to.equal(0);
  });

  it('removes with the old deliveries the bodies no delivery still names, and keeps the others', async () => {
    const old = T0 - 40 * 86_400_000;
    const at = (doc: DeliveryDoc, status: DeliveryDoc['status'], createdMs: number): DeliveryDoc => ({
      ...doc,
      status,
      next_attempt_at: status === 'pending' ? createdMs : null,
      created_ms: createdMs,
    });
    await deliveries.write({
      upserts: [
        // event 1: both deliveries ended long ago, so its body goes with them
        { collection: DELIVERIES, doc: at(lean('we_a', 'v1', 1, true), 'succeeded', old) },
        { collection: DELIVERIES, doc: at(lean('we_b', 'v1', 1, true), 'failed', old) },
        { collection: PAYLOADS, doc: body(1, ['we_a', 'we_b']) },
        // event 2: one delivery still pending, so its body stays
        { collection: DELIVERIES, doc: at(lean('we_a', 'v2', 2, true), 'succeeded', old) },
        { collection: DELIVERIES, doc: at(lean('we_b', 'v2', 2, true), 'pending', old) },
        { collection: PAYLOADS, doc: body(2, ['we_a', 'we_b']) },
        // event 3: recent, nothing removed
        { collection: DELIVERIES, doc: at(lean('we_a', 'v3', 3, true), 'succeeded', T0) },
        { collection: PAYLOADS, doc: body(3, ['we_a']) },
        // an old delivery holding its own body
        { collection: DELIVERIES, doc: at(delivery('we_a', 'v4', 4, true), 'succeeded', old) },
      ],
    });
    const control = localDeliveryControl(deliveries, { wake: () => {} });
    expect(await control.purge(T0 - 30 * 86_400_000)).to.equal(4);
    const left = await deliveries.find({}, { skip: 0, limit: 100 });
    expect(left.map((d) => d.id).sort()).to.deep.equal(['msg_we_a_3', 'msg_we_b_2']);
    const bodies = await deliveries.store.find<PayloadDoc>(PAYLOADS, {}, { sort: [['id', 1]] });
    expect(bodies.map((b) => b.id)).to.deep.equal(['evt_2', 'evt_3']);
  });

  it('recovers failed deliveries in order per voucher: behind one still pending, or behind an earlier recovered one', async () => {
    const failed = (voucher: string, seq: number): DeliveryDoc => ({
      ...delivery('we_a', voucher, seq, false),
      status: 'failed',
    });
    await deliveries.write({
      upserts: [
        { collection: DELIVERIES, doc: failed('v1', 1) },
        { collection: DELIVERIES, doc: failed('v1', 2) },
        { collection: DELIVERIES, doc: failed('v2', 3) },
        { collection: DELIVERIES, doc: delivery('we_a', 'v3', 4, true) }, // still pending
        { collection: DELIVERIES, doc: failed('v3', 5) },
        { collection: DELIVERIES, doc: { ...failed('v2', 6), endpoint_id: 'we_b', id: 'msg_we_b_6' } },
      ],
    });
    const control = localDeliveryControl(deliveries, { wake: () => {} });
    expect(await control.recover('we_a', T0 - 1_000, T0 + 5)).to.equal(4);
    const after = await deliveries.getMany(['msg_we_a_1', 'msg_we_a_2', 'msg_we_a_3', 'msg_we_a_5', 'msg_we_b_6']);
    expect(
      [...after.values()].sort((a, b) => a.seq - b.seq).map((d) => `${d.id} ${d.status} ${d.next_attempt_at}`),
    ).to.deep.equal([
      `msg_we_a_1 pending ${T0 + 5}`,
      'msg_we_a_2 pending null', // behind msg_we_a_1, recovered with it
      `msg_we_a_3 pending ${T0 + 5}`,
      'msg_we_a_5 pending null', // behind msg_we_a_4, pending from before
      'msg_we_b_6 failed null', // another endpoint's
    ]);
  });

  it('never removes a delivery a resend made pending again while the purge was reading its page', async () => {
    const old = T0 - 40 * 86_400_000;
    await deliveries.write({
      upserts: [
        {
          collection: DELIVERIES,
          doc: { ...lean('we_a', 'v1', 1, true), status: 'failed', next_attempt_at: null, created_ms: old },
        },
        { collection: PAYLOADS, doc: body(1, ['we_a']) },
      ],
    });
    const control = localDeliveryControl(deliveries, { wake: () => {} });
    // the resend is asked for while the purge reads its page of old deliveries
    let resent: Promise<DeliveryDoc | null> | undefined;
    const read = deliveries.storage.endedBefore.bind(deliveries.storage);
    sinon.stub(deliveries.storage, 'endedBefore').callsFake(async (...args: Parameters<typeof read>) => {
      const page = await read(...args);
      resent ??= control.resend('we_a', 'msg_we_a_1', T0);
      for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
      return page;
    });
    await control.purge(T0 - 30 * 86_400_000);
    const answer = await resent!;
    const stored = await deliveries.get('msg_we_a_1');
    // either the resend came first and the delivery stays, pending, or it answers that the delivery is gone
    if (answer) expect(stored).to.include({ status: 'pending' });
    else expect(stored).to.equal(null);
    expect(answer === null).to.equal(stored === null);
  });
});
