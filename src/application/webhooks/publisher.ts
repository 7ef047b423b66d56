import { createHash } from 'node:crypto';
import type { Bus, BusMessage } from '../../core/bus.ts';
import type { EventStore, RecordedEvent } from '../../core/eventStore.ts';
import { LogConsumer } from '../../core/logConsumer.ts';
import type { ProjectorHandle, RunnerLogger } from '../../core/projectionRunner.ts';
import type { WriteBatch } from '../../core/readStore.ts';
import type { SnapshotStore } from '../../core/snapshotStore.ts';
import type { VoucherEvent } from '../../domain/voucher/events.ts';
import { voucherStream } from '../../domain/voucher/events.ts';
import {
  applicationOf,
  evolveCore as evolveVoucher,
  usageDelta,
  type Voucher,
  type VoucherState,
} from '../../domain/voucher/state.ts';
import { voucherSnapshots } from '../../domain/voucher/snapshot.ts';
import { evolve as evolveEndpoint } from '../../domain/webhooks/endpoint.ts';
import {
  changesEndpoint,
  subscribes,
  WEBHOOK_ENDPOINT_EVENT_TYPES,
  type WebhookEndpointEvent,
  type WebhookEventType,
} from '../../domain/webhooks/events.ts';
import type { Environment } from '../context.ts';
import type { EnvironmentEvent } from '../events.ts';
import { renderApplication, renderVoucher, viewFromState } from '../views.ts';
import {
  DELIVERIES,
  ENDPOINTS,
  PAYLOADS,
  PUBLISHER_CHECKPOINT,
  pendingKey,
  type DeliveryDoc,
  type DeliveryKey,
  type DeliveryStore,
  type EndpointDoc,
  type PayloadDoc,
} from './deliveryStore.ts';
import type { FirstAttempts } from './dispatcher.ts';
import type { Pacer } from './pacer.ts';
import { encodePublishedEvent } from './publishedEvent.ts';

/**
 * Where the publisher reads the environment's events: a catch-up subscription from a checkpoint,
 * and one stream's events up to a revision. The embedded event store provides both; a bus such
 * as Kafka would provide the subscription (a consumer from an offset), the event store the rest.
 */
export type EventSource = Pick<EventStore<EnvironmentEvent>, 'subscribeToAll' | 'readStream'>;

/** The webhook event each voucher event becomes, and the domain time it happened at. */
const WEBHOOK_TYPES: Record<VoucherEvent['type'], WebhookEventType> = {
  VoucherCreated: 'voucher.created',
  VoucherUpdated: 'voucher.updated',
  VoucherDeactivated: 'voucher.deleted',
  VoucherApplied: 'voucher.applied',
  VoucherApplicationRolledBack: 'voucher.application_rolled_back',
  VoucherExpired: 'voucher.expired',
};

const happenedAt = (event: VoucherEvent): string => {
  switch (event.type) {
    case 'VoucherCreated':
      return event.data.createdAt;
    case 'VoucherUpdated':
      return event.data.updatedAt;
    case 'VoucherDeactivated':
      return event.data.deactivatedAt;
    case 'VoucherApplied':
      return event.data.appliedAt;
    case 'VoucherApplicationRolledBack':
      return event.data.rolledBackAt;
    case 'VoucherExpired':
      return event.data.expiredAt;
  }
};

const isVoucherEvent = (e: RecordedEvent<EnvironmentEvent>): e is RecordedEvent<VoucherEvent> =>
  e.type in WEBHOOK_TYPES && e.streamId.startsWith('voucher-');
const isEndpointEvent = (e: RecordedEvent<EnvironmentEvent>): e is RecordedEvent<WebhookEndpointEvent> =>
  changesEndpoint(e.type, e.streamId);
/** An endpoint events are delivered to: enabled and not deleted. */
const isLive = (endpoint: EndpointDoc): boolean => !endpoint.deleted && endpoint.status === 'enabled';

/** `evt_…` from the stored event's id: every attempt, resend and recovery carries the same one. */
export const eventIdOf = (event: RecordedFieldsLike): string => `evt_${event.id.replace(/[^A-Za-z0-9]/g, '')}`;
interface RecordedFieldsLike {
  id: string;
}
/**
 * `msg_` + the first 16 characters of the event id (an embedded store's event ids are UUIDv7:
 * milliseconds and a sequence, so ids made later sort later) + 12 hex digits of a hash of event id
 * and endpoint id. The same event and endpoint always give the same id (a batch made again is
 * recorded once), and the deliveries' primary-key index grows at its right edge instead of
 * dirtying a random page per delivery (decision 071).
 */
export const deliveryIdOf = (eventId: string, endpointId: string): string =>
  `msg_${eventId
    .slice(4)
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 16)}${createHash('sha256').update(`${eventId}/${endpointId}`).digest('hex').slice(0, 12)}`;

/** A body stays under 20 kB (decisions.md): larger vouchers leave out their longest members. */
export const MAX_BODY_BYTES = 20_000;
/** What a body too large leaves out, in this order, until it fits (named in `data.truncated`). */
const DROPPABLE = [
  'conditions.product_ids',
  'conditions.excluded_product_ids',
  'validation_rules',
  'config',
  'application',
] as const;

/** The body, with the voucher's longest members left out (and named) while it is over MAX_BODY_BYTES. */
const bounded = (body: { data: Record<string, unknown> } & Record<string, unknown>): string => {
  let json = JSON.stringify(body);
  const data = { ...body.data, conditions: { ...(body.data.conditions as object) } } as Record<string, unknown>;
  const truncated: string[] = [];
  for (const path of DROPPABLE) {
    if (Buffer.byteLength(json) < MAX_BODY_BYTES) break;
    const [head, tail] = path.split('.') as [string, string | undefined];
    const owner = tail ? (data[head] as Record<string, unknown>) : data;
    const key = tail ?? head;
    if (owner[key] === undefined) continue;
    delete owner[key];
    truncated.push(path);
    json = JSON.stringify({ ...body, data: { ...data, truncated } });
  }
  return json;
};

/** A voucher event to fan out: its webhook event, and the endpoints subscribed at its point of the log. */
interface Planned {
  event: RecordedEvent<VoucherEvent>;
  type: WebhookEventType;
  voucherId: string;
  targets: string[];
  event_id: string;
  created_at: string;
  payload: string;
}

const STATE_CACHE_SIZE = 2_000;
/** Events read at a time when a voucher the cache does not hold is folded from its stream's start. */
const STATE_READ_PAGE = 1_000;
/** Batches without deliveries read before the checkpoint is written anyway (bounds the re-read after a crash). */
const UNWRITTEN_BATCHES = 100;
/**
 * How long a batch waits for the first attempts of its deliveries before it is stored (decision
 * 083): until every one is answered, or none has been for FIRST_ATTEMPTS_IDLE_MS, or for at most
 * FIRST_ATTEMPTS_MAX_MS. The deliveries answered by then are stored once, with their outcome; the
 * others as pending.
 */
export const FIRST_ATTEMPTS_IDLE_MS = 200;
export const FIRST_ATTEMPTS_MAX_MS = 2_000;

/** A batch's deliveries and event bodies, and the keys that had a delivery pending in the store before it. */
interface FannedOut {
  docs: DeliveryDoc[];
  bodies: PayloadDoc[];
  /** Keys (pendingKey) whose deliveries in this batch wait behind one stored before the batch. */
  behindStored: Set<string>;
}

/** What a WebhookPublisher may be given beyond its log, store, environment and hand-over of new deliveries. */
export interface WebhookPublisherOptions {
  logger?: RunnerLogger;
  /** Told each position the publisher has handled. */
  onAdvance?: (position: number) => void;
  /** Publishes to the bus instead of making deliveries (decision 051). */
  bus?: Pick<Bus, 'publish'>;
  /** The command side's voucher snapshots (decision 059): a voucher not cached is folded from its snapshot's core when that is at or before the event. */
  snapshots?: Pick<SnapshotStore, 'load'>;
  /** Holds batches back while the service's request thread is saturated (decision 075); unset: never. */
  pacer?: Pacer;
  /**
   * The dispatcher, to attempt a batch's deliveries before they are stored (decision 083); unset:
   * each batch's deliveries are stored first and handed to `onDeliveries`.
   */
  firstAttempts?: { attemptFirst(docs: readonly DeliveryDoc[]): FirstAttempts };
}

/**
 * Fans the environment's events out as webhook deliveries (decision 026). A consumer of the log
 * with its own checkpoint, like a projection group: for each batch it folds the endpoint events
 * (so it knows which endpoints were subscribed at each point of the log), turns each voucher event
 * into the webhook event (rendered from the voucher's state at that event, not from the current
 * read model) and one delivery per subscribed endpoint, and writes the deliveries, its copy of the
 * endpoints and its checkpoint in one transaction: a crash neither loses an event nor makes a
 * second delivery of one.
 *
 * Given a bus (KAFKA_BROKERS, decision 051), it makes no deliveries itself: it publishes every
 * voucher event to the environment's topic, keyed by the voucher id, with the ids of the
 * endpoints subscribed at that point of the log, and writes its checkpoint and its copy of the
 * endpoints only after the bus stored the messages. A failed publish fails the batch: the
 * consumer reads again from the stored checkpoint (a batch published twice is recorded once by
 * `BusDeliveries`, whose delivery ids come from the event and the endpoint).
 */
export class WebhookPublisher implements ProjectorHandle {
  private readonly consumer: LogConsumer<EnvironmentEvent>;
  private readonly endpoints = new Map<string, EndpointDoc>();
  /**
   * Voucher cores (evolveCore: no applications) by id at their last event seen, so a voucher is
   * read from its stream only when not cached.
   */
  private readonly states = new Map<string, { revision: number; state: VoucherState }>();
  /** Batches that made no delivery and changed no endpoint since the checkpoint was last written. */
  private unwritten = 0;

  constructor(
    private readonly source: EventSource,
    private readonly deliveries: DeliveryStore,
    private readonly environment: Environment,
    private readonly onDeliveries: (deliveries: DeliveryDoc[]) => void,
    private readonly options: WebhookPublisherOptions = {},
  ) {
    const { logger, onAdvance, bus, pacer } = options;
    this.consumer = new LogConsumer<EnvironmentEvent>({
      events: source,
      maxBatchSize: 500,
      load: () => this.load(),
      handle: async (batch, through) => {
        if (pacer && batch.length > 0) await pacer.wait(Date.parse(batch[0]!.recordedAt), this.checkpoint);
        return bus ? this.publish(batch, bus, through) : this.handle(batch, through);
      },
      // the bus gets every voucher event, whether an endpoint listens or not
      ...(bus ? {} : { onlyTypes: () => this.typesNeeded() }),
      failure: 'webhook publisher failed',
      logger,
      onAdvance,
    });
  }

  get checkpoint(): number {
    return this.consumer.checkpoint;
  }

  /** Whether an endpoint is enabled at the publisher's point of the log: only then can an event make a delivery. */
  get subscribed(): boolean {
    for (const endpoint of this.endpoints.values()) if (isLive(endpoint)) return true;
    return false;
  }

  async start(): Promise<void> {
    await this.deliveries.start();
    await this.consumer.start();
  }

  waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    return this.consumer.waitFor(position, timeoutMs);
  }

  async stop(): Promise<void> {
    this.options.pacer?.stop();
    await this.consumer.stop();
    if (this.unwritten > 0)
      await this.deliveries.exclusive(() =>
        this.deliveries.write({ checkpoint: { name: PUBLISHER_CHECKPOINT, position: this.checkpoint } }),
      );
  }

  /**
   * While no endpoint is enabled, only the events that change endpoints (decision 095): the
   * subscription passes over the others without decoding them, and the voucher cores cached so
   * far are dropped, since they fall behind (a core is read again when an endpoint needs it).
   */
  private typesNeeded(): readonly string[] | undefined {
    if (this.subscribed) return undefined;
    this.states.clear();
    return WEBHOOK_ENDPOINT_EVENT_TYPES;
  }

  /** The stored checkpoint and the endpoints as they were there (at start, and after a failed batch). */
  private async load(): Promise<number> {
    this.states.clear();
    this.endpoints.clear();
    this.unwritten = 0;
    for (const doc of await this.deliveries.store.find<EndpointDoc>(ENDPOINTS)) this.endpoints.set(doc.id, doc);
    return this.deliveries.store.getCheckpoint(PUBLISHER_CHECKPOINT);
  }

  /**
   * One batch: deliveries, endpoint copies and the checkpoint in one write. With `firstAttempts`
   * and no endpoint changed in the batch, the deliveries that can go at once are attempted first
   * and stored once with their outcome (attemptBeforeStoring). `through`: the position the batch
   * reaches, past its last event when the subscription passed over events (see typesNeeded).
   */
  async handle(batch: RecordedEvent<EnvironmentEvent>[], through?: number): Promise<void> {
    const end = through ?? batch.at(-1)?.position;
    if (end === undefined || end <= this.checkpoint) return;
    const created: DeliveryDoc[] = [];
    let unstored: { write: WriteBatch; made: FannedOut; first: DeliveryDoc[] } | undefined;
    await this.deliveries.exclusive(async () => {
      const write: WriteBatch = {
        upserts: [],
        deletes: [],
        checkpoint: { name: PUBLISHER_CHECKPOINT, position: end },
      };
      const changed = new Set<string>();
      const planned: Planned[] = [];
      for (const event of batch) {
        if (event.position <= this.checkpoint) continue;
        if (isEndpointEvent(event)) {
          const before = this.endpoints.get(event.data.endpointId) ?? null;
          const next = evolveEndpoint(before, event);
          if (next) this.endpoints.set(next.id, next as EndpointDoc);
          changed.add(event.data.endpointId);
        } else if (isVoucherEvent(event)) {
          const plan = await this.plan(event);
          if (plan) planned.push(plan);
        }
      }
      const made = await this.fanOut(planned);
      // an attempt reads its endpoint's stored copy: a batch that changes one stores it first
      if (this.options.firstAttempts && changed.size === 0 && made.docs.length > 0) {
        const first = made.docs.filter((d) => d.next_attempt_at !== null);
        this.deliveries.hold(first);
        unstored = { write, made, first };
        return;
      }
      for (const doc of made.docs) write.upserts!.push({ collection: DELIVERIES, doc });
      for (const doc of made.bodies) write.upserts!.push({ collection: PAYLOADS, doc });
      created.push(...made.docs);
      for (const id of changed) {
        const doc = this.endpoints.get(id);
        if (doc) write.upserts!.push({ collection: ENDPOINTS, doc: { ...doc } });
      }
      // A batch that makes nothing need not move the stored checkpoint at once: after a crash it
      // is read again and makes nothing again (the endpoints at each point of the log are the same).
      // This keeps a write per batch off the service when no endpoint listens.
      if (write.upserts!.length === 0 && this.unwritten < UNWRITTEN_BATCHES) {
        this.unwritten += 1;
        return;
      }
      await this.deliveries.write(write);
      this.unwritten = 0;
    });
    if (unstored) created.push(...(await this.attemptBeforeStoring(unstored)));
    this.consumer.advance(end);
    if (created.length > 0) this.onDeliveries(created);
  }

  /**
   * Decision 083: the batch's deliveries that go at once (the first of each endpoint and voucher,
   * none pending before the batch) are attempted before anything of the batch is stored. Once they
   * are all answered (or none has been for FIRST_ATTEMPTS_IDLE_MS, or after FIRST_ATTEMPTS_MAX_MS),
   * the batch is stored in one write: each answered delivery in its next version (succeeded,
   * failed, or pending with its retry), the others as made (pending), the bodies and the
   * checkpoint. The delivery that waited behind one that has ended goes next. Until that write the
   * checkpoint stays before the batch: a crash makes the batch again from the log, with the same
   * ids and `webhook-id`s (at least once).
   * Returns the deliveries the write made due, for the dispatcher. `first`: the deliveries that go
   * at once, their keys held as pending (`hold`) until the write.
   */
  private async attemptBeforeStoring({
    write,
    made,
    first,
  }: {
    write: WriteBatch;
    made: FannedOut;
    first: DeliveryDoc[];
  }): Promise<DeliveryDoc[]> {
    const bodies = new Map(made.bodies.map((b) => [b.id, b.payload]));
    const attempts = this.options.firstAttempts!.attemptFirst(
      first.map((d) => ({ ...d, payload: bodies.get(d.event_id)! })),
    );
    await attempts.settled(FIRST_ATTEMPTS_IDLE_MS, FIRST_ATTEMPTS_MAX_MS);
    const released: DeliveryDoc[] = [];
    await this.deliveries.exclusive(async () => {
      this.deliveries.release(first);
      const outcomes = attempts.close(write);
      // a delivery stored before the batch may have ended meanwhile: then the first of its key in the batch goes
      const stillPending =
        made.behindStored.size > 0
          ? await this.deliveries.pendingKeys(
              made.docs.filter((d) => made.behindStored.has(pendingKey(d.endpoint_id, d.order_key))),
            )
          : new Set<string>();
      const freed = new Set([...made.behindStored].filter((key) => !stillPending.has(key)));
      for (const doc of made.docs) {
        const key = pendingKey(doc.endpoint_id, doc.order_key);
        let row = outcomes.get(doc.id) ?? doc;
        if (row !== doc) {
          if (row.status !== 'pending') freed.add(key);
        } else if (doc.next_attempt_at === null && freed.delete(key)) {
          row = { ...doc, next_attempt_at: doc.created_ms };
          released.push(row);
        }
        write.upserts!.push({ collection: DELIVERIES, doc: row });
      }
      for (const doc of made.bodies) write.upserts!.push({ collection: PAYLOADS, doc });
      await this.deliveries.write(write);
      this.unwritten = 0;
    });
    attempts.stored();
    return released;
  }

  /**
   * One batch onto the bus, then the endpoint copies and the checkpoint in one write. A message
   * naming an endpoint whose copy changed in this batch is published only after that copy is
   * written (with the checkpoint just before the message's event): the dispatcher reads the
   * endpoint's URL and secrets from the copy when it attempts the delivery.
   */
  private async publish(
    batch: RecordedEvent<EnvironmentEvent>[],
    bus: Pick<Bus, 'publish'>,
    through?: number,
  ): Promise<void> {
    const end = through ?? batch.at(-1)?.position;
    if (end === undefined || end <= this.checkpoint) return;
    let messages: BusMessage[] = [];
    const changed = new Set<string>();
    const flush = async (position: number): Promise<void> => {
      if (messages.length > 0) await bus.publish(this.environment, messages);
      const upserts = [...changed].flatMap((id) => {
        const doc = this.endpoints.get(id);
        return doc ? [{ collection: ENDPOINTS, doc: { ...doc } }] : [];
      });
      if (messages.length > 0 || upserts.length > 0 || this.unwritten >= UNWRITTEN_BATCHES) {
        await this.deliveries.write({ upserts, deletes: [], checkpoint: { name: PUBLISHER_CHECKPOINT, position } });
        this.unwritten = 0;
      } else this.unwritten += 1;
      messages = [];
      changed.clear();
    };
    let previous = this.checkpoint;
    for (const event of batch) {
      if (event.position <= this.checkpoint) continue;
      if (isEndpointEvent(event)) {
        const next = evolveEndpoint(this.endpoints.get(event.data.endpointId) ?? null, event);
        if (next) this.endpoints.set(next.id, next as EndpointDoc);
        changed.add(event.data.endpointId);
      } else if (isVoucherEvent(event)) {
        const made = await this.message(event);
        if (made) {
          if (made.endpoints.some((id) => changed.has(id))) await flush(previous);
          messages.push(made.message);
        }
      }
      previous = event.position;
    }
    await flush(end);
    this.consumer.advance(end);
  }

  /** The bus message of a voucher event: its webhook body and the endpoints subscribed at it. */
  private async message(
    event: RecordedEvent<VoucherEvent>,
  ): Promise<{ message: BusMessage; endpoints: string[] } | null> {
    const type = WEBHOOK_TYPES[event.type];
    const voucherId = event.data.voucherId;
    const voucher = await this.stateAt(voucherId, event);
    if (!voucher) return null;
    const endpoints = [...this.endpoints.values()]
      .filter((e) => isLive(e) && subscribes(e.events, type))
      .map((e) => e.id);
    const value = encodePublishedEvent({
      ...this.render(event, voucher),
      type,
      seq: event.position,
      voucher_id: voucherId,
      endpoints,
    });
    return { message: { key: voucherId, value, headers: { 'event-type': type } }, endpoints };
  }

  /** The webhook event's id, time and body (the same for every endpoint and every attempt). */
  private render(
    event: RecordedEvent<VoucherEvent>,
    voucher: Voucher,
  ): { event_id: string; created_at: string; payload: string } {
    const at = happenedAt(event);
    const eventId = eventIdOf(event);
    const data: Record<string, unknown> = renderVoucher(viewFromState(voucher), new Date(at));
    if (event.type === 'VoucherApplied' || event.type === 'VoucherApplicationRolledBack') {
      data.application = renderApplication(voucher, applicationOf(event, voucher));
    }
    const type = WEBHOOK_TYPES[event.type];
    return {
      event_id: eventId,
      created_at: at,
      payload: bounded({ id: eventId, type, created_at: at, environment: this.environment, data }),
    };
  }

  /**
   * A voucher event's webhook event and the endpoints subscribed to it at this point of the log,
   * or null when none is (the cached voucher state is kept current without a read).
   */
  private async plan(event: RecordedEvent<VoucherEvent>): Promise<Planned | null> {
    const type = WEBHOOK_TYPES[event.type];
    const targets = [...this.endpoints.values()]
      .filter((e) => isLive(e) && subscribes(e.events, type))
      .map((e) => e.id);
    const voucherId = event.data.voucherId;
    if (targets.length === 0) {
      this.follow(voucherId, event); // keeps a cached state current; reads nothing
      return null;
    }
    const voucher = await this.stateAt(voucherId, event);
    if (!voucher) return null;
    return { event, type, voucherId, targets, ...this.render(event, voucher) };
  }

  /**
   * The batch's deliveries and bodies. One lookup tells which endpoint and voucher keys already
   * have a pending delivery: a delivery of such a key waits behind it, as does every later one of
   * the key in the batch.
   */
  private async fanOut(planned: readonly Planned[]): Promise<FannedOut> {
    const made: FannedOut = { docs: [], bodies: [], behindStored: new Set() };
    if (planned.length === 0) return made;
    const keys = new Map<string, DeliveryKey>();
    for (const { voucherId, targets } of planned)
      for (const endpointId of targets)
        keys.set(pendingKey(endpointId, voucherId), { endpoint_id: endpointId, order_key: voucherId });
    const pending = await this.deliveries.pendingKeys([...keys.values()]);
    for (const key of pending) made.behindStored.add(key);
    for (const { event, type, voucherId, targets, event_id: eventId, created_at: at, payload } of planned) {
      const createdMs = Date.parse(at);
      const ids: string[] = [];
      for (const endpointId of targets) {
        const key = pendingKey(endpointId, voucherId);
        const waits = pending.has(key);
        pending.add(key);
        const doc: DeliveryDoc = {
          id: deliveryIdOf(eventId, endpointId),
          endpoint_id: endpointId,
          event_id: eventId,
          event_type: type,
          order_key: voucherId,
          seq: event.position,
          status: 'pending',
          next_attempt_at: waits ? null : createdMs,
          attempts: [],
          created_at: at,
          created_ms: createdMs,
        };
        made.docs.push(doc);
        ids.push(doc.id);
      }
      made.bodies.push({ id: eventId, payload, deliveries: ids });
    }
    return made;
  }

  private follow(voucherId: string, event: RecordedEvent<VoucherEvent>): void {
    const cached = this.states.get(voucherId);
    if (!cached) return;
    if (cached.revision === event.revision - 1)
      this.remember(voucherId, event.revision, evolveVoucher(cached.state, event));
    else if (cached.revision < event.revision) this.states.delete(voucherId);
  }

  /**
   * The voucher's state right after `event`: from the cache when it is one event behind, else from
   * its snapshot and stream. A snapshot at or before the event is folded forward; a snapshot past
   * it is unwound back to it when only uses (applications, rollbacks, voided reservations) lie
   * between and they are no more than the events before it; otherwise the stream is folded from
   * its start. Either way a page of events is held at a time, never a long history whole.
   */
  private async stateAt(voucherId: string, event: RecordedEvent<VoucherEvent>): Promise<Voucher | null> {
    const cached = this.states.get(voucherId);
    let state: VoucherState | undefined;
    if (cached?.revision === event.revision) state = cached.state;
    else if (cached?.revision === event.revision - 1) state = evolveVoucher(cached.state, event);
    else {
      const stream = voucherStream(voucherId);
      const snapshot = await this.loadSnapshot(stream);
      if (snapshot && snapshot.revision > event.revision && snapshot.revision - event.revision <= event.revision)
        state = await this.unwind(stream, snapshot, event.revision);
      if (state === undefined) {
        const base = snapshot && snapshot.revision <= event.revision ? snapshot : undefined;
        state = base ? voucherSnapshots.fromCore(base.core) : null;
        for await (const page of this.pages(stream, base ? base.revision + 1 : 0, event.revision))
          for (const e of page) state = evolveVoucher(state, e);
      }
    }
    this.remember(voucherId, event.revision, state);
    return state;
  }

  /**
   * The voucher's core at `revision`, from a snapshot past it: the snapshot's core with the uses
   * of the events between taken back. Undefined when an event between may have changed more than
   * the usage count (anything but an application, a rollback or a voided reservation), or when the
   * stream does not hold every revision up to the snapshot's.
   */
  private async unwind(
    stream: string,
    snapshot: { revision: number; core: unknown },
    revision: number,
  ): Promise<VoucherState | undefined> {
    const later = voucherSnapshots.fromCore(snapshot.core);
    if (!later) return undefined;
    let uses = 0;
    let next = revision + 1;
    for await (const page of this.pages(stream, next, snapshot.revision))
      for (const e of page) {
        const delta = e.revision === next ? usageDelta(e) : null;
        if (delta === null) return undefined;
        uses += delta;
        next++;
      }
    if (next !== snapshot.revision + 1) return undefined;
    return { ...later, usageCount: later.usageCount - uses };
  }

  /**
   * The stream's events from revision `from` through `to`, a page of at most STATE_READ_PAGE at a
   * time, so a long history is never held whole; it ends early where the stream does.
   */
  private async *pages(stream: string, from: number, to: number): AsyncGenerator<RecordedEvent<VoucherEvent>[]> {
    while (from <= to) {
      const page = await this.source.readStream<VoucherEvent>(stream, {
        fromRevision: from,
        maxCount: Math.min(STATE_READ_PAGE, to + 1 - from),
      });
      if (page.length === 0) return;
      yield page;
      from = page.at(-1)!.revision + 1;
    }
  }

  /** The stream's snapshot; one that cannot be read is skipped: snapshots are derived data, the stream has everything. */
  private async loadSnapshot(stream: string): Promise<{ revision: number; core: unknown } | undefined> {
    const { snapshots, logger } = this.options;
    if (!snapshots) return undefined;
    try {
      return (await snapshots.load(stream)) ?? undefined;
    } catch (error) {
      logger?.error({ err: error, stream }, 'voucher snapshot not read: folding the stream from its start');
      return undefined;
    }
  }

  private remember(voucherId: string, revision: number, state: VoucherState): void {
    this.states.delete(voucherId);
    this.states.set(voucherId, { revision, state });
    if (this.states.size > STATE_CACHE_SIZE) this.states.delete(this.states.keys().next().value!);
  }
}
