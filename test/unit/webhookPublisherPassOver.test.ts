/**
 * While no endpoint is enabled, the webhook publisher asks its subscription for the events that
 * change endpoints only (decision 095): the voucher events are passed over undecoded, the
 * checkpoint still reaches the log's head, and the event right after an endpoint is enabled is
 * delivered as before. Runs on the embedded event store, whose subscription filters.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { WebhookPublisher, type EventSource } from '../../src/application/webhooks/publisher.ts';
import type { EnvironmentEvent } from '../../src/application/events.ts';
import { DeliveryStore, type DeliveryDoc } from '../../src/application/webhooks/deliveryStore.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { voucherApplied, voucherCreated, webhookEndpointCreated, webhookEndpointUpdated } from '../fixtures/events.ts';
import { until } from '../support/webhookReceiver.ts';

const VOUCHER = 'voucher-v_1';
const ENDPOINT = 'webhook-we_1';
const applied = (n: number) => ({ ...voucherApplied({ applicationId: `va_${n}`, orderId: `o_${n}` }), metadata: {} });

describe('webhook publisher: the log passed over while no endpoint is enabled', () => {
  let dir: string;
  let store: SqliteEventStore<EnvironmentEvent>;
  let deliveries: DeliveryStore;
  let publisher: WebhookPublisher | undefined;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'publisher-pass-over-'));
    store = SqliteEventStore.open<EnvironmentEvent>(path.join(dir, 'events.db'), { pollIntervalMs: 20 });
    deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(':memory:')));
  });

  afterEach(async () => {
    await publisher?.stop();
    await deliveries.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('hands it only endpoint events until one is enabled, and every event from the next one on until it is disabled', async () => {
    await store.appendToStream(VOUCHER, [{ ...voucherCreated(), metadata: {} }]);
    for (let n = 1; n <= 5; n++) await store.appendToStream(VOUCHER, [applied(n)]);
    const created = await store.appendToStream(ENDPOINT, [{ ...webhookEndpointCreated(), metadata: {} }]);
    const firstHeard = await store.appendToStream(VOUCHER, [applied(6)]);

    const seen: string[] = [];
    const source: EventSource = {
      subscribeToAll: (options, handler) =>
        store.subscribeToAll(options, (batch, through) => {
          seen.push(...batch.map((e) => `${e.position}:${e.type}`));
          return handler(batch, through);
        }),
      readStream: (stream, options) => store.readStream(stream, options),
    };
    const made: DeliveryDoc[] = [];
    publisher = new WebhookPublisher(source, deliveries, 'sandbox', (docs) => made.push(...docs));
    await publisher.start();
    await until(() => made.length === 1, 'the delivery of the application after the endpoint was created');

    expect(made[0]!.seq).to.equal(firstHeard.position);
    expect(seen).to.deep.equal([`${created.position}:WebhookEndpointCreated`, `${firstHeard.position}:VoucherApplied`]);

    const disabled = await store.appendToStream(ENDPOINT, [
      { ...webhookEndpointUpdated({ status: 'disabled' }), metadata: {} },
    ]);
    await until(() => publisher!.subscribed === false, 'the publisher to take the endpoint as disabled');
    let head = 0;
    for (let n = 7; n <= 9; n++) head = (await store.appendToStream(VOUCHER, [applied(n)])).position;
    expect(await publisher.waitFor(head), 'the checkpoint reaches the head').to.equal(true);
    expect(seen.slice(2)).to.deep.equal([`${disabled.position}:WebhookEndpointUpdated`]);
    expect(made).to.have.length(1);
  });
});
