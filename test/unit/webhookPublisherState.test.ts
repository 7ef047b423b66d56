/**
 * The webhook publisher folds a voucher it does not hold from the voucher's snapshot core (folded
 * forward when it is at or before the event, unwound back when it is past it and only applications
 * and rollbacks lie between) or its stream's start, in pages: a voucher with a long history costs
 * a page of events in memory at a time, and the webhook it renders is the voucher as of the event.
 */
import { expect } from 'chai';
import { WebhookPublisher, type EventSource } from '../../src/application/webhooks/publisher.ts';
import type { EnvironmentEvent } from '../../src/application/events.ts';
import type { ReadStreamOptions, RecordedEvent } from '../../src/core/eventStore.ts';
import type { SnapshotStore } from '../../src/core/snapshotStore.ts';
import { DeliveryStore, type DeliveryDoc } from '../../src/application/webhooks/deliveryStore.ts';
import { voucherSnapshots } from '../../src/domain/voucher/snapshot.ts';
import { evolveCore, type VoucherState } from '../../src/domain/voucher/state.ts';
import type { VoucherStreamEvent } from '../../src/domain/voucher/events.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import {
  recorded,
  voucherApplicationRolledBack,
  voucherApplied,
  voucherCreated,
  voucherUpdated,
  webhookEndpointCreated,
} from '../fixtures/events.ts';
import { until } from '../support/webhookReceiver.ts';

/** Applications recorded before any endpoint listens. */
const HISTORY = 2_400;
/** The revision of the voucher's last event, the one an endpoint gets. */
const LAST = HISTORY + 1;

/** The event at `position` of the log, at `revision` of its stream. */
const record = (event: EnvironmentEvent, position: number, revision: number) =>
  recorded(event, position, { revision }) as RecordedEvent<EnvironmentEvent>;

/**
 * A voucher with HISTORY applications, an endpoint created, then one more application, then the
 * voucher's events `after` (the command side went on while the publisher was behind).
 */
const makeLog = (after: EnvironmentEvent[] = []): RecordedEvent<EnvironmentEvent>[] => {
  const log: RecordedEvent<EnvironmentEvent>[] = [record(voucherCreated(), 1, 0)];
  for (let i = 1; i <= HISTORY; i++)
    log.push(record(voucherApplied({ applicationId: `va_${i}`, orderId: `o_${i}` }), i + 1, i));
  log.push(record(webhookEndpointCreated(), HISTORY + 2, 0));
  log.push(record(voucherApplied({ applicationId: 'va_last', orderId: 'o_last' }), HISTORY + 3, LAST));
  after.forEach((event, i) => log.push(record(event, HISTORY + 4 + i, LAST + 1 + i)));
  return log;
};

/** The snapshot the command side would have stored at `revision`: the core folded to there. */
const snapshotAt = (log: RecordedEvent<EnvironmentEvent>[], revision: number) => {
  let state: VoucherState = null;
  for (const e of log)
    if (e.streamId.startsWith('voucher-') && e.revision <= revision)
      state = evolveCore(state, e as unknown as RecordedEvent<VoucherStreamEvent>);
  return { revision, core: voucherSnapshots.core(state) };
};

/**
 * Runs a publisher over the log until it made the delivery of the application at LAST (its first):
 * the stream reads and that delivery's body.
 */
const publish = async (snapshots?: Pick<SnapshotStore, 'load'>, log = makeLog()) => {
  const reads: ReadStreamOptions[] = [];
  const errors: string[] = [];
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
  const logger = { error: (_obj: object, msg: string) => errors.push(msg) };
  const publisher = new WebhookPublisher(source, deliveries, 'sandbox', (docs) => made.push(...docs), {
    logger,
    snapshots,
  });
  await publisher.start();
  await until(() => made.length >= 1, 'the delivery of the application at LAST');
  await publisher.stop();
  const body = JSON.parse((await deliveries.payloads(made)).get(made[0]!.id)!) as {
    type: string;
    data: { usage_count: number; status: string; application: { order_id: string } };
  };
  await deliveries.close();
  return { reads, body, errors };
};

const expectLastApplication = (body: Awaited<ReturnType<typeof publish>>['body']) => {
  expect(body.type).to.equal('voucher.applied');
  expect(body.data.usage_count).to.equal(HISTORY + 1);
  expect(body.data.status).to.equal('active');
  expect(body.data.application.order_id).to.equal('o_last');
};

/** Applications and a rollback after LAST: the usage count rises by two past it. */
const usesAfter = (): EnvironmentEvent[] => [
  voucherApplied({ applicationId: 'va_a1', orderId: 'o_a1' }),
  voucherApplied({ applicationId: 'va_a2', orderId: 'o_a2' }),
  voucherApplicationRolledBack({ applicationId: 'va_a1', orderId: 'o_a1' }),
  voucherApplied({ applicationId: 'va_a3', orderId: 'o_a3' }),
];

describe('webhook publisher: the state of a voucher it does not hold', () => {
  it('folds the stream in pages of at most 1,000 events and renders the voucher as of the event', async () => {
    const { reads, body } = await publish();
    expect(reads.length, 'pages read').to.equal(3);
    for (const options of reads) expect(options.maxCount).to.be.at.most(1_000);
    expect(reads.map((o) => o.fromRevision ?? 0)).to.deep.equal([0, 1_000, 2_000]);
    expectLastApplication(body);
  });

  it('starts from the snapshot core when the snapshot is at or before the event', async () => {
    const stored = snapshotAt(makeLog(), 2_350);
    const asked: string[] = [];
    const { reads, body } = await publish({
      load: async (stream) => {
        asked.push(stream);
        return stored;
      },
    });
    expect(asked).to.have.length(1);
    expect(reads.map((o) => [o.fromRevision, o.maxCount])).to.deep.equal([[2_351, LAST - 2_350]]);
    expectLastApplication(body);
  });

  it('unwinds a snapshot past the event when only applications and rollbacks lie between', async () => {
    const log = makeLog(usesAfter());
    const stored = snapshotAt(log, LAST + 4);
    expect((stored.core as { usageCount: number }).usageCount, 'the snapshot counts the later uses').to.equal(
      HISTORY + 3,
    );
    const { reads, body } = await publish({ load: async () => stored }, log);
    expect(reads.map((o) => [o.fromRevision, o.maxCount])).to.deep.equal([[LAST + 1, 4]]);
    expectLastApplication(body);
  });

  it('reads from the start when the snapshot is past the event and a change of terms lies between', async () => {
    const log = makeLog([...usesAfter(), voucherUpdated({ status: 'inactive' })]);
    const { reads, body } = await publish({ load: async () => snapshotAt(log, LAST + 5) }, log);
    expect(reads.map((o) => o.fromRevision ?? 0)).to.deep.equal([LAST + 1, 0, 1_000, 2_000]);
    expectLastApplication(body);
  });

  it('reads from the start when that is shorter than unwinding, or the stream lacks the revisions between', async () => {
    const later: EnvironmentEvent[] = Array.from({ length: LAST + 1 }, (_, i) =>
      voucherApplied({ applicationId: `va_b${i}`, orderId: `o_b${i}` }),
    );
    const log = makeLog(later);
    const far = await publish({ load: async () => snapshotAt(log, 2 * LAST + 1) }, log);
    expect(far.reads.map((o) => o.fromRevision ?? 0)).to.deep.equal([0, 1_000, 2_000]);
    expectLastApplication(far.body);

    const missing = await publish({ load: async () => ({ revision: LAST + 5, core: { usageCount: 999_999 } }) });
    expect(missing.reads.map((o) => o.fromRevision ?? 0)).to.deep.equal([LAST + 1, 0, 1_000, 2_000]);
    expectLastApplication(missing.body);

    const failing = await publish({
      load: async () => {
        throw new Error('snapshots.db is locked');
      },
    });
    expect(failing.reads.map((o) => o.fromRevision ?? 0)).to.deep.equal([0, 1_000, 2_000]);
    expectLastApplication(failing.body);
    expect(failing.errors).to.deep.equal(['voucher snapshot not read: folding the stream from its start']);
  });
});
