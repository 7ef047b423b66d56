/** The dispatcher on a real deliveries store (SQLite), with a sender double: backlogs and recording outcomes. */
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
  type DeliveryDoc,
} from '../../src/application/webhooks/deliveryStore.ts';
import { WebhookDispatcher } from '../../src/application/webhooks/dispatcher.ts';
import type { SendRequest, SendResult } from '../../src/domain/webhooks/delivery.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const endpoint = (id: string) => ({
  id,
  url: `http://127.0.0.1:9/${id}`,
  events: ['voucher.applied'],
  description: null,
  status: 'enabled',
  secrets: [{ secret: `whsec_${'a'.repeat(32)}`, expiresAt: null }],
  createdAt: '2026-03-01T00:00:00Z',
  updatedAt: '2026-03-01T00:00:00Z',
  deleted: false,
});
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
    deliveries = new DeliveryStore(store);
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
    const writes = sinon.spy(store, 'writeBatch');
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
});
