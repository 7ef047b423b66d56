/**
 * Decision 083: the publisher attempts a batch's deliveries that can go at once before it stores
 * them, and stores each with its outcome in one write, the checkpoint beside them. A real
 * publisher, dispatcher and SQLite deliveries store, with a sender double.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import type { EnvironmentEvent } from '../../src/application/events.ts';
import { WebhookDispatcher } from '../../src/application/webhooks/dispatcher.ts';
import {
  DELIVERIES,
  DeliveryStore,
  PUBLISHER_CHECKPOINT,
  type DeliveryDoc,
} from '../../src/application/webhooks/deliveryStore.ts';
import {
  FIRST_ATTEMPTS_IDLE_MS,
  WebhookPublisher,
  type EventSource,
} from '../../src/application/webhooks/publisher.ts';
import type { RecordedEvent } from '../../src/core/eventStore.ts';
import type { WriteBatch } from '../../src/core/readStore.ts';
import type { SendRequest, SendResult } from '../../src/domain/webhooks/delivery.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { recorded, voucherApplied, voucherCreated, webhookEndpointCreated } from '../fixtures/events.ts';
import { until } from '../support/webhookReceiver.ts';

const V1 = { voucherId: 'v_1', code: 'ONE' };
const V2 = { voucherId: 'v_2', code: 'TWO' };
const APPLIED_AT = '2026-01-03T10:00:00Z';

/** Batch 1 creates endpoint we_a and both vouchers; batch 2 applies v_1 twice and v_2 once. */
const BATCHES = [
  [
    recorded(webhookEndpointCreated({ endpointId: 'we_a', url: 'http://127.0.0.1:9/a' }), 1, { revision: 0 }),
    recorded(voucherCreated(V1), 2, { revision: 0 }),
    recorded(voucherCreated(V2), 3, { revision: 0 }),
  ],
  [
    recorded(voucherApplied({ ...V1, applicationId: 'va_1', orderId: 'o_1', appliedAt: APPLIED_AT }), 4, {
      revision: 1,
    }),
    recorded(voucherApplied({ ...V2, applicationId: 'va_2', orderId: 'o_2', appliedAt: APPLIED_AT }), 5, {
      revision: 1,
    }),
    recorded(voucherApplied({ ...V1, applicationId: 'va_3', orderId: 'o_3', appliedAt: APPLIED_AT }), 6, {
      revision: 2,
    }),
  ],
] as RecordedEvent<EnvironmentEvent>[][];
const LOG = BATCHES.flat();

/** The batches handed over one after the other, each once the one before is handled; streams read from the log. */
const batchSource = (): EventSource => ({
  subscribeToAll: (_options, handler) => {
    void (async () => {
      for (const batch of BATCHES) await handler(batch as never);
    })();
    return { close: async () => {} };
  },
  readStream: (async (stream: string) =>
    LOG.filter((e) => e.streamId === stream)) as unknown as EventSource['readStream'],
});

/** The voucher a request's body is about, and its application. */
const about = (request: SendRequest): string => {
  const body = JSON.parse(request.body) as { data: { id: string; application: { id: string } } };
  return `${body.data.id}/${body.data.application.id}`;
};

describe('webhook deliveries attempted before they are stored (decision 083)', () => {
  let deliveries: DeliveryStore;
  let storage: SqliteDeliveries;
  let dispatcher: WebhookDispatcher;
  let publisher: WebhookPublisher | undefined;

  beforeEach(async () => {
    storage = new SqliteDeliveries(SqliteReadStore.open(':memory:'));
    deliveries = new DeliveryStore(storage);
    await deliveries.start();
  });
  afterEach(async () => {
    await dispatcher.stop();
    await publisher?.stop();
    publisher = undefined;
    sinon.restore();
    await deliveries.close();
  });

  const start = async (
    sender: (request: SendRequest) => Promise<SendResult>,
    retryDelaysMs = [60_000],
  ): Promise<void> => {
    dispatcher = new WebhookDispatcher({
      deliveries,
      clock: { now: () => new Date() },
      sender,
      settings: { allowedCidrs: [], retryDelaysMs, timeoutMs: 10_000 },
      version: 'test',
      disable: async () => {},
    });
    dispatcher.start();
    publisher = new WebhookPublisher(batchSource(), deliveries, 'sandbox', (docs) => dispatcher.enqueue(docs), {
      firstAttempts: dispatcher,
    });
    await publisher.start();
  };

  /** Every delivery row each write stored, by delivery id. */
  const rowsWritten = (writes: sinon.SinonSpy<[WriteBatch], Promise<void>>): Map<string, DeliveryDoc[]> => {
    const rows = new Map<string, DeliveryDoc[]>();
    for (const call of writes.getCalls())
      for (const { collection, doc } of call.args[0].upserts ?? [])
        if (collection === DELIVERIES) rows.set(doc.id, [...(rows.get(doc.id) ?? []), doc as DeliveryDoc]);
    return rows;
  };

  it('stores a delivery answered at once a single time, with its outcome, and the next of its voucher goes after it', async () => {
    const writes = sinon.spy(storage, 'write');
    const sent: string[] = [];
    let inFlight = new Set<string>();
    let overlapped = false;
    await start(async (request) => {
      const voucher = about(request).split('/')[0]!;
      if (inFlight.has(voucher)) overlapped = true;
      inFlight.add(voucher);
      sent.push(about(request));
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight = new Set([...inFlight].filter((v) => v !== voucher));
      return { status: 204, durationMs: 5 };
    });
    await until(async () => (await deliveries.count({ status: 'succeeded' })) === 3, 'three deliveries succeeded');

    expect(overlapped, 'two deliveries of one voucher in flight at once').to.equal(false);
    expect(sent.indexOf('v_1/va_1')).to.be.below(sent.indexOf('v_1/va_3'));
    expect(sent).to.have.members(['v_1/va_1', 'v_2/va_2', 'v_1/va_3']);
    const rows = rowsWritten(writes);
    const first = [...rows.values()].filter((versions) => versions.length === 1);
    // va_1 and va_2 went at once: stored once, already succeeded, with their attempt
    expect(first).to.have.length(2);
    for (const [row] of first) {
      expect(row!.status).to.equal('succeeded');
      expect(row!.attempts).to.have.length(1);
      expect(row!.payload, 'the body stays in memory, not in the row').to.equal(undefined);
    }
    // va_3 waited behind va_1: stored due once va_1 had succeeded (one write), then with its outcome
    const waited = [...rows.values()].find((versions) => versions.length === 2)!;
    expect(waited.map((d) => d.status)).to.deep.equal(['pending', 'succeeded']);
    expect(waited[0]!.next_attempt_at).to.not.equal(null);
    expect(await deliveries.store.getCheckpoint(PUBLISHER_CHECKPOINT)).to.equal(6);
  });

  it('stores nothing of the batch, its checkpoint before it, while its first attempts are unanswered; after the wait, stores them pending and records their outcomes later', async () => {
    const answers: Array<() => void> = [];
    await start(
      (request) =>
        new Promise<SendResult>((resolve) => {
          answers.push(() => resolve({ status: 204, durationMs: 1 }));
          request.signal?.addEventListener('abort', () => resolve({ error: 'aborted', durationMs: 1 }));
        }),
    );
    await until(() => answers.length === 2, 'the first attempts of va_1 and va_2');
    expect(await deliveries.count({})).to.equal(0);
    // batch 1 (the endpoint's copy) is stored; batch 2 not yet: a crash now makes it again from the log
    expect(await deliveries.store.getCheckpoint(PUBLISHER_CHECKPOINT)).to.equal(3);

    await new Promise((resolve) => setTimeout(resolve, FIRST_ATTEMPTS_IDLE_MS + 100));
    expect(await deliveries.count({ status: 'pending' })).to.equal(3);
    expect(await deliveries.store.getCheckpoint(PUBLISHER_CHECKPOINT)).to.equal(6);

    for (const answer of answers.splice(0)) answer();
    await until(() => answers.length === 1, 'va_3 once va_1 is answered');
    answers[0]!();
    await until(async () => (await deliveries.count({ status: 'succeeded' })) === 3, 'every outcome recorded');
  });

  it('stores a first attempt that failed as pending with its attempt, and retries it from the store', async () => {
    const tries = new Map<string, number>();
    await start(
      async (request) => {
        const key = about(request);
        tries.set(key, (tries.get(key) ?? 0) + 1);
        return key === 'v_2/va_2' && tries.get(key) === 1
          ? { status: 500, durationMs: 1 }
          : { status: 204, durationMs: 1 };
      },
      [50],
    );
    await until(async () => (await deliveries.count({ status: 'succeeded' })) === 3, 'every delivery succeeded');
    expect(tries.get('v_2/va_2')).to.equal(2);
    const [retried] = await deliveries
      .find({ endpoint_id: 'we_a' }, { skip: 0, limit: 10 })
      .then((all) => all.filter((d) => d.order_key === 'v_2'));
    expect(retried!.attempts.map((a) => a.response_status)).to.deep.equal([500, 204]);
  });

  it('counts the key of a delivery attempted and not stored yet as pending, for a recovery meanwhile, until it is released', async () => {
    dispatcher = new WebhookDispatcher({
      deliveries,
      clock: { now: () => new Date() },
      sender: async () => ({ status: 204, durationMs: 1 }),
      settings: { allowedCidrs: [], retryDelaysMs: [60_000], timeoutMs: 10_000 },
      version: 'test',
      disable: async () => {},
    });
    const key = { endpoint_id: 'we_a', order_key: 'v_1' };
    const other = { endpoint_id: 'we_b', order_key: 'v_1' };
    deliveries.hold([key]);
    expect([...(await deliveries.pendingKeys([key, other]))]).to.deep.equal(['we_a/v_1']);
    expect([
      ...(await deliveries.fenced(() => ({ id: 'l', field: 'f', value: 1 }) as never).pendingKeys([key])),
    ]).to.deep.equal(['we_a/v_1']);
    deliveries.release([key]);
    expect(await deliveries.pendingKeys([key, other])).to.have.property('size', 0);
  });

  it('sends a delivery that waited behind one stored before the batch, when that one ends while the batch is attempted', async () => {
    // a delivery of v_1 to we_a pending from before, due now: the batch's v_1 deliveries wait behind it
    const older: DeliveryDoc = {
      id: 'msg_older',
      endpoint_id: 'we_a',
      event_id: 'evt_older',
      event_type: 'voucher.applied',
      order_key: 'v_1',
      seq: 0,
      payload: '{"data":{"id":"v_1","application":{"id":"va_0"}}}',
      status: 'pending',
      next_attempt_at: Date.now() + 50, // once the batch is being attempted
      attempts: [],
      created_at: '2026-01-01T00:00:00Z',
      created_ms: Date.parse('2026-01-01T00:00:00Z'),
    };
    await deliveries.write({ upserts: [{ collection: DELIVERIES, doc: older }] });
    const sent: string[] = [];
    let releaseV2: (() => void) | undefined;
    await start(async (request) => {
      const key = about(request);
      sent.push(key);
      // va_2 (the batch's only first attempt) is answered late, so the batch waits while the older one ends
      if (key === 'v_2/va_2') await new Promise<void>((resolve) => (releaseV2 = resolve));
      return { status: 204, durationMs: 1 };
    });
    await until(() => sent.includes('v_1/va_0') && releaseV2 !== undefined, 'the older delivery and va_2 sent');
    await until(async () => (await deliveries.get('msg_older'))?.status === 'succeeded', 'the older one recorded');
    releaseV2!();
    await until(async () => (await deliveries.count({ status: 'succeeded' })) === 4, 'every delivery succeeded');
    expect(sent.filter((k) => k.startsWith('v_1/'))).to.deep.equal(['v_1/va_0', 'v_1/va_1', 'v_1/va_3']);
  });
});
