/**
 * Webhooks through the bus (decision 051), on the in-memory bus: the publisher produces each
 * voucher event to the environment's topic, the dispatcher's group member records the deliveries
 * and only then lets the offset be committed. The service is stopped during deliveries and started
 * again on the same data and the same bus: every event is accepted, in order per voucher, repeats
 * carry the same webhook-id, every request verifies with standardwebhooks. A bus that refuses
 * publishes for a while loses nothing; a message handed twice makes one delivery.
 */
import { expect } from 'chai';
import { BusUnavailableError, type Bus, type DeliveredMessage } from '../../src/core/bus.ts';
import { BusDeliveries } from '../../src/application/webhooks/busDeliveries.ts';
import { WebhookPublisher, type EventSource } from '../../src/application/webhooks/publisher.ts';
import type { EnvironmentEvent } from '../../src/application/events.ts';
import type { RecordedEvent } from '../../src/core/eventStore.ts';
import { recorded, voucherCreated, voucherUpdated, webhookEndpointCreated } from '../fixtures/events.ts';
import { DeliveryStore, PAYLOADS, type DeliveryDoc } from '../../src/application/webhooks/deliveryStore.ts';
import { parseCidrs } from '../../src/domain/webhooks/targets.ts';
import { InMemoryBus } from '../../src/infrastructure/bus/inMemoryBus.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { applyBody } from '../fixtures/orders.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';
import { TestService } from '../support/harness.ts';
import { until, verify, WebhookReceiver, type Received } from '../support/webhookReceiver.ts';

/** Real time (standardwebhooks checks timestamps against it). */
class RealClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

const VOUCHERS = 3;
const APPLIES = 12;

const start = (bus: Bus, dataDir?: string) =>
  TestService.start({
    clock: new RealClock(),
    dataDir,
    webhooks: { allowedCidrs: parseCidrs('127.0.0.0/8'), retryDelaysMs: Array(30).fill(100), timeoutMs: 1_000 },
    webhookBus: bus,
  });

/** Every message on the environment's topic, read by a group of its own. */
const topicMessages = async (bus: Bus, environment: string): Promise<DeliveredMessage[]> => {
  const seen: DeliveredMessage[] = [];
  const sub = await bus.subscribe({
    groupId: `test-reader-${Math.random()}`,
    environments: [environment],
    handler: async (m) => {
      seen.push(m);
    },
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  await sub.stop();
  return seen;
};

/** Per voucher, the usage counts of the events as first accepted: 0 (created), 1, 2, ... */
const usageOrder = (accepted: Received[]): Map<string, number[]> => {
  const first = new Map<string, any>();
  for (const r of accepted) if (!first.has(r.eventId)) first.set(r.eventId, r.json);
  const perVoucher = new Map<string, number[]>();
  for (const e of first.values()) perVoucher.set(e.data.id, [...(perVoucher.get(e.data.id) ?? []), e.data.usage_count]);
  return perVoucher;
};

describe('webhooks through the in-memory bus', function () {
  this.timeout(60_000);
  let receiver: WebhookReceiver;
  let bus: InMemoryBus;
  let service: TestService | undefined;

  beforeEach(async () => {
    receiver = await WebhookReceiver.start();
    bus = new InMemoryBus();
    await bus.start(['sandbox', 'production']);
  });
  afterEach(async () => {
    await service?.stop();
    service = undefined;
    await bus.close();
    await receiver.stop();
  });

  it('delivers every event across a stop during deliveries, in order per voucher, repeats with the same webhook-id', async () => {
    const first = await start(bus);
    service = first;
    const early = await first.createVoucher(fixedVoucher('BUSEARLY')); // before any endpoint
    const endpoint = (await first.post('/v1/webhooks', { url: receiver.url('/bus'), events: ['*'] })).body;
    receiver.answer('/bus', (_r, attempt) => (attempt % 2 === 1 ? 500 : { slowMs: 100, status: 200 }));
    const vouchers: { code: string }[] = [];
    for (let v = 0; v < VOUCHERS; v++) vouchers.push(await first.createVoucher(fixedVoucher(`BUS${v}`)));
    const applied = await Promise.all(
      Array.from({ length: APPLIES }, (_, i) =>
        first.post('/v1/vouchers/apply', applyBody(vouchers[i % VOUCHERS]!.code, `bus-order-${i}`)),
      ),
    );
    for (const res of applied) expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await until(() => receiver.at('/bus').length >= 3, 'deliveries under way');
    await first.stop(true);
    service = undefined;
    expect(new Set(receiver.accepted('/bus').map((r) => r.eventId)).size, 'stopped midway').to.be.below(
      VOUCHERS + APPLIES,
    );

    // every voucher event went through the topic, keyed by its voucher, naming the endpoint
    const onTopic = await topicMessages(bus, 'sandbox');
    expect(onTopic).to.have.length(1 + VOUCHERS + APPLIES);
    for (const m of onTopic) {
      const event = JSON.parse(m.value);
      expect(m.key).to.equal(event.voucher_id);
      // the endpoints subscribed at the event's position: none yet for the early voucher
      expect(event.endpoints).to.deep.equal(event.voucher_id === early.id ? [] : [endpoint.id]);
    }
    expect(await topicMessages(bus, 'production')).to.have.length(0);

    receiver.answer('/bus', 200);
    service = await start(bus, first.dataDir);
    await until(
      () => new Set(receiver.accepted('/bus').map((r) => r.eventId)).size === VOUCHERS + APPLIES,
      'every event accepted after the restart',
      30_000,
    );
    const all = receiver.at('/bus');
    const bodies = new Map<string, string>();
    for (const r of all) {
      expect(() => verify(endpoint.secret, r), r.eventId).to.not.throw();
      expect(bodies.get(r.eventId) ?? r.body, `${r.eventId} is always the same body`).to.equal(r.body);
      bodies.set(r.eventId, r.body);
    }
    const perVoucher = usageOrder(receiver.accepted('/bus'));
    expect(perVoucher.size).to.equal(VOUCHERS);
    for (const [voucherId, counts] of perVoucher)
      expect(counts, voucherId).to.deep.equal(Array.from({ length: APPLIES / VOUCHERS + 1 }, (_, i) => i));
  });

  it('loses nothing while the bus refuses publishes: the publisher retries from its checkpoint', async () => {
    let refusals = 3;
    const flaky: Bus = {
      topicOf: (environment) => bus.topicOf(environment),
      start: (environments) => bus.start(environments),
      subscribe: (options) => bus.subscribe(options),
      close: () => bus.close(),
      publish: (environment, messages) =>
        refusals-- > 0 ? Promise.reject(new BusUnavailableError('Kafka is away')) : bus.publish(environment, messages),
    };
    service = await start(flaky);
    const endpoint = (await service.post('/v1/webhooks', { url: receiver.url('/flaky'), events: ['*'] })).body;
    const voucher = await service.createVoucher(fixedVoucher('FLAKY'));
    for (let i = 0; i < 3; i++)
      expect((await service.post('/v1/vouchers/apply', applyBody(voucher.code, `flaky-${i}`))).status).to.equal(201);
    await until(() => receiver.accepted('/flaky').length >= 4, 'every event after the refusals', 30_000);
    expect(refusals).to.be.below(0);
    const got = receiver.accepted('/flaky');
    expect(got.map((r) => r.json.data.usage_count)).to.deep.equal([0, 1, 2, 3]);
    expect(new Set(got.map((r) => r.eventId)).size).to.equal(4);
    for (const r of got) expect(() => verify(endpoint.secret, r)).to.not.throw();
  });

  it('writes the copy of an endpoint before publishing a message naming it (one batch creates both)', async () => {
    const record = (event: EnvironmentEvent, position: number, revision: number) =>
      recorded(event, position, { revision }) as RecordedEvent<EnvironmentEvent>;
    const batch = [
      record(voucherCreated(), 1, 0),
      record(webhookEndpointCreated({ url: 'https://example.com/hook', events: ['*'] }), 2, 0),
      record(voucherUpdated(), 3, 1),
    ];
    const source: EventSource = {
      subscribeToAll: (_options, handler) => {
        void Promise.resolve(handler(batch as never));
        return { close: async () => {} };
      },
      readStream: (async (stream: string, options?: { maxCount?: number }) =>
        batch.filter((e) => e.streamId === stream).slice(0, options?.maxCount)) as EventSource['readStream'],
    };
    const deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(':memory:')));
    const published: { endpoints: string[]; copy: boolean }[] = [];
    const recording: Pick<Bus, 'publish'> = {
      publish: async (_environment, messages) => {
        for (const m of messages) {
          const endpoints = JSON.parse(m.value).endpoints as string[];
          const copies = await Promise.all(endpoints.map((id) => deliveries.endpoint(id)));
          published.push({ endpoints, copy: copies.every((c) => c !== null) });
        }
      },
    };
    const publisher = new WebhookPublisher(source, deliveries, 'sandbox', () => {}, { bus: recording });
    await publisher.start();
    await until(() => published.length === 2, 'both voucher events published');
    expect(published).to.deep.equal([
      { endpoints: [], copy: true },
      { endpoints: ['we_1'], copy: true },
    ]);
    await publisher.stop();
    await deliveries.close();
  });

  it('records a message handed twice as one delivery, and one that is not a published event as none', async () => {
    service = await start(bus);
    const deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(':memory:')));
    await deliveries.start();
    const made: DeliveryDoc[] = [];
    const consumer = new BusDeliveries(bus, deliveries, 'sandbox', (docs) => made.push(...docs));
    const message = (value: string, offset: string): DeliveredMessage => ({
      environment: 'sandbox',
      key: 'v_1',
      value,
      headers: {},
      partition: 0,
      offset,
    });
    const event = {
      event_id: 'evt_1',
      type: 'voucher.applied',
      created_at: '2026-01-01T00:00:00Z',
      payload: '{}',
      seq: 7,
      voucher_id: 'v_1',
      endpoints: ['we_a', 'we_b'],
    };
    await consumer.handle(message(JSON.stringify(event), '0'));
    await consumer.handle(message(JSON.stringify(event), '1'));
    await consumer.handle(message('not json', '2'));
    await consumer.handle(message(JSON.stringify({ ...event, endpoints: 'we_a' }), '3'));
    expect(made.map((d) => d.endpoint_id)).to.deep.equal(['we_a', 'we_b']);
    expect(await deliveries.count({})).to.equal(2);
    // the body is stored once for the event, naming both deliveries; the deliveries do not copy it
    expect(made.map((d) => d.payload)).to.deep.equal([undefined, undefined]);
    expect(await deliveries.store.find(PAYLOADS)).to.deep.equal([
      { id: 'evt_1', payload: '{}', deliveries: made.map((d) => d.id) },
    ]);
    expect([...(await deliveries.payloads(made)).values()]).to.deep.equal(['{}', '{}']);
    // the next event of the voucher waits behind the pending one of each endpoint
    await consumer.handle(message(JSON.stringify({ ...event, event_id: 'evt_2', seq: 8 }), '4'));
    expect(made.slice(2).map((d) => d.next_attempt_at)).to.deep.equal([null, null]);
    await deliveries.close();
  });
});
