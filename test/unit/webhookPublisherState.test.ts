/**
 * The webhook publisher folds a voucher it does not hold from the voucher's stream in pages: a
 * voucher with a long history costs a page of events in memory at a time, and the webhook it
 * renders is the voucher as of the event.
 */
import { expect } from 'chai';
import { WebhookPublisher, type EventSource } from '../../src/application/webhooks/publisher.ts';
import type { EnvironmentEvent } from '../../src/application/events.ts';
import type { ReadStreamOptions, RecordedEvent } from '../../src/core/eventStore.ts';
import { DeliveryStore, type DeliveryDoc } from '../../src/application/webhooks/deliveryStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { recorded, voucherApplied, voucherCreated, webhookEndpointCreated } from '../fixtures/events.ts';
import { until } from '../support/webhookReceiver.ts';

/** Applications recorded before any endpoint listens. */
const HISTORY = 2_400;

/** The event at `position` of the log, at `revision` of its stream. */
const record = (event: EnvironmentEvent, position: number, revision: number) =>
  recorded(event, position, { revision }) as RecordedEvent<EnvironmentEvent>;

describe('webhook publisher: the state of a voucher it does not hold', () => {
  it('folds the stream in pages of at most 1,000 events and renders the voucher as of the event', async () => {
    const log: RecordedEvent<EnvironmentEvent>[] = [record(voucherCreated(), 1, 0)];
    for (let i = 1; i <= HISTORY; i++)
      log.push(record(voucherApplied({ applicationId: `va_${i}`, orderId: `o_${i}` }), i + 1, i));
    log.push(record(webhookEndpointCreated(), HISTORY + 2, 0));
    const last = HISTORY + 1;
    log.push(record(voucherApplied({ applicationId: 'va_last', orderId: 'o_last' }), HISTORY + 3, last));
    const reads: ReadStreamOptions[] = [];
    const source: EventSource = {
      subscribeToAll: (_options, handler) => {
        void Promise.resolve(handler(log as never));
        return { close: async () => {} };
      },
      readStream: (async (stream: string, options: ReadStreamOptions = {}) => {
        reads.push(options);
        const from = options.fromRevision ?? 0;
        const events = log.filter((e) => e.streamId === stream && e.revision >= from);
        return options.maxCount === undefined ? events : events.slice(0, options.maxCount);
      }) as EventSource['readStream'],
    };
    const deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(':memory:')));
    const made: DeliveryDoc[] = [];
    const publisher = new WebhookPublisher(source, deliveries, 'sandbox', (docs) => made.push(...docs));
    await publisher.start();
    await until(() => made.length === 1, 'the delivery of the last application');
    await publisher.stop();

    expect(reads.length, 'pages read').to.equal(3);
    for (const options of reads) expect(options.maxCount).to.be.at.most(1_000);
    expect(reads.map((o) => o.fromRevision ?? 0)).to.deep.equal([0, 1_000, 2_000]);
    const body = JSON.parse((await deliveries.payloads(made)).get(made[0]!.id)!) as {
      type: string;
      data: { usage_count: number; application: { order_id: string } };
    };
    expect(body.type).to.equal('voucher.applied');
    expect(body.data.usage_count).to.equal(HISTORY + 1);
    expect(body.data.application.order_id).to.equal('o_last');
    await deliveries.close();
  });
});
