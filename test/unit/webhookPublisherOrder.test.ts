/**
 * The webhook publisher decides, for each delivery it makes, whether it goes at once or waits
 * behind an earlier delivery of its endpoint and voucher: one lookup of the pending keys per batch
 * (those stored before the batch), and the keys the batch itself has made pending.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { Pacer } from '../../src/application/webhooks/pacer.ts';
import { WebhookPublisher, type EventSource } from '../../src/application/webhooks/publisher.ts';
import type { EnvironmentEvent } from '../../src/application/events.ts';
import type { RecordedEvent } from '../../src/core/eventStore.ts';
import { DELIVERIES, DeliveryStore, type DeliveryDoc } from '../../src/application/webhooks/deliveryStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { recorded, voucherApplied, voucherCreated, webhookEndpointCreated } from '../fixtures/events.ts';
import { until } from '../support/webhookReceiver.ts';

const V1 = { voucherId: 'v_1', code: 'ONE' };
const V2 = { voucherId: 'v_2', code: 'TWO' };

/** One batch: two vouchers, endpoint A, an application of each, endpoint B, two more of v_1. */
const LOG = [
  recorded(voucherCreated(V1), 1, { revision: 0 }),
  recorded(voucherCreated(V2), 2, { revision: 0 }),
  recorded(webhookEndpointCreated({ endpointId: 'we_a' }), 3, { revision: 0 }),
  recorded(voucherApplied({ ...V1, applicationId: 'va_1', orderId: 'o_1' }), 4, { revision: 1 }),
  recorded(voucherApplied({ ...V2, applicationId: 'va_2', orderId: 'o_2' }), 5, { revision: 1 }),
  recorded(webhookEndpointCreated({ endpointId: 'we_b' }), 6, { revision: 0 }),
  recorded(voucherApplied({ ...V1, applicationId: 'va_3', orderId: 'o_3' }), 7, { revision: 2 }),
  recorded(voucherApplied({ ...V1, applicationId: 'va_4', orderId: 'o_4' }), 8, { revision: 3 }),
] as RecordedEvent<EnvironmentEvent>[];

/** The log handed over as one batch, and its streams read from it. */
const logSource = (): EventSource => ({
  subscribeToAll: (_options, handler) => {
    void Promise.resolve(handler(LOG as never));
    return { close: async () => {} };
  },
  readStream: (async (stream: string) =>
    LOG.filter((e) => e.streamId === stream)) as unknown as EventSource['readStream'],
});

describe('webhook publisher: which deliveries wait behind an earlier one', () => {
  it('makes a delivery wait when its key was pending before the batch or earlier in it, with one lookup per batch', async () => {
    const storage = new SqliteDeliveries(SqliteReadStore.open(':memory:'));
    const deliveries = new DeliveryStore(storage);
    await deliveries.start();
    // endpoint A has a delivery of v_2 still pending from before (retrying)
    const older: DeliveryDoc = {
      id: 'msg_older',
      endpoint_id: 'we_a',
      event_id: 'evt_older',
      event_type: 'voucher.applied',
      order_key: 'v_2',
      seq: 0,
      status: 'pending',
      next_attempt_at: Date.parse('2026-01-02T00:00:00Z'),
      attempts: [],
      created_at: '2026-01-01T00:00:00Z',
      created_ms: Date.parse('2026-01-01T00:00:00Z'),
      payload: '{}',
    };
    await deliveries.write({ upserts: [{ collection: DELIVERIES, doc: older }] });
    const lookups = sinon.spy(storage, 'pendingKeys');
    const source = logSource();
    const made: DeliveryDoc[] = [];
    const publisher = new WebhookPublisher(source, deliveries, 'sandbox', (docs) => made.push(...docs));
    await publisher.start();
    await until(() => made.length === 6, 'the batch’s six deliveries');
    await publisher.stop();

    const summary = made.map(
      (d) => `${d.endpoint_id} ${d.order_key} @${d.seq} ${d.next_attempt_at === null ? 'waits' : 'due'}`,
    );
    expect(summary).to.deep.equal([
      'we_a v_1 @4 due',
      'we_a v_2 @5 waits', // behind the delivery pending from before the batch
      'we_a v_1 @7 waits', // behind @4, made in this batch
      'we_b v_1 @7 due', // endpoint B did not exist at @4 and @5
      'we_a v_1 @8 waits',
      'we_b v_1 @8 waits',
    ]);
    expect(lookups.callCount).to.equal(1);
    expect(lookups.firstCall.args[0].map((k) => `${k.endpoint_id}/${k.order_key}`).sort()).to.deep.equal([
      'we_a/v_1',
      'we_a/v_2',
      'we_b/v_1',
    ]);
    // stored as made
    const stored = await deliveries.getMany(made.map((d) => d.id));
    expect(made.map((d) => stored.get(d.id)?.next_attempt_at)).to.deep.equal(made.map((d) => d.next_attempt_at));
    await deliveries.close();
  });
});

describe('webhook publisher: batches held back while the request thread is saturated', () => {
  const start = async (load: { value: number }) => {
    const deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(':memory:')));
    const source = logSource();
    // the log's events were recorded just now, so the longest deferral (a minute) is far off
    const clock = { now: () => new Date(Date.parse(LOG[0]!.recordedAt) + 1_000) };
    const pacer = new Pacer({ load: () => load.value, maxDeferMs: 60_000, clock });
    const made: DeliveryDoc[] = [];
    const publisher = new WebhookPublisher(source, deliveries, 'sandbox', (docs) => made.push(...docs), { pacer });
    await publisher.start();
    return { made, publisher, pacer, deliveries };
  };
  const aWhile = () => new Promise((resolve) => setTimeout(resolve, 150));

  it('makes no delivery while the load stays above the bar, and makes them once it falls', async () => {
    const load = { value: 0.95 };
    const { made, publisher, deliveries } = await start(load);
    await aWhile();
    expect(made).to.have.length(0);
    load.value = 0.3;
    await until(() => made.length === 6, 'the batch’s deliveries once the load fell');
    await publisher.stop();
    await deliveries.close();
  });

  it('does not hold back a batch a request waits for, and stops while holding one back', async () => {
    const load = { value: 1 };
    const first = await start(load);
    first.pacer.hurry(LOG.at(-1)!.position);
    await until(() => first.made.length === 6, 'the deliveries a request waits for');
    await first.publisher.stop();
    await first.deliveries.close();
    const second = await start(load);
    await aWhile();
    await second.publisher.stop(); // returns although the load never fell
    expect(second.made).to.have.length(0);
    await second.deliveries.close();
  });
});
