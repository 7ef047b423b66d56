import type { Bus, BusSubscription, DeliveredMessage } from '../../core/bus.ts';
import type { RunnerLogger } from '../../core/projectionRunner.ts';
import {
  DELIVERIES,
  PAYLOADS,
  pendingKey,
  type DeliveryDoc,
  type DeliveryStore,
  type PayloadDoc,
} from './deliveryStore.ts';
import { deliveryIdOf } from './publisher.ts';
import { decodePublishedEvent } from './publishedEvent.ts';

/** Pause before a failed join of the dispatcher group is tried again. */
const JOIN_RETRY_MS = 1_000;

/** The consumer group of an environment's webhook dispatchers: one per topic. */
export const webhookGroupOf = (bus: Pick<Bus, 'topicOf'>, environment: string): string =>
  `${bus.topicOf(environment)}.webhook-dispatchers`;

/**
 * The dispatcher's side of the bus (decision 051): a member of the environment's dispatcher
 * group that turns each published event into one delivery per endpoint it names and records them
 * in the deliveries store before the handler resolves, so the bus commits the message's offset
 * only once its deliveries are durable. A message handed again (after a crash, a rebalance, or a
 * batch the publisher published twice) records nothing new: a delivery's id comes from the event
 * and the endpoint, and one already stored is left as it is. A voucher's messages come in order
 * (one partition per key), so a delivery waits behind the pending one of its endpoint and voucher
 * exactly as on the embedded path.
 */
export class BusDeliveries {
  private subscription?: BusSubscription;
  private joining?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly bus: Pick<Bus, 'subscribe' | 'topicOf'>,
    private readonly deliveries: DeliveryStore,
    private readonly environment: string,
    private readonly onDeliveries: (deliveries: DeliveryDoc[]) => void,
    private readonly logger?: RunnerLogger,
  ) {}

  /**
   * Joins the group in the background: a join can wait for the session of a member that died to
   * expire (Kafka: 30 s), and the service answers meanwhile. A failed join is logged and tried
   * again after JOIN_RETRY_MS. Resolves once the group was joined (or the member stopped).
   */
  start(): Promise<void> {
    this.joining ??= this.join();
    return this.joining;
  }

  private async join(): Promise<void> {
    while (!this.stopped) {
      try {
        const subscription = await this.bus.subscribe({
          groupId: webhookGroupOf(this.bus, this.environment),
          environments: [this.environment],
          handler: (message) => this.handle(message),
          onHandlerError: (error, message) =>
            this.logger?.error(
              { err: error, partition: message.partition, offset: message.offset },
              'recording webhook deliveries from the bus failed; retrying the message',
            ),
        });
        if (this.stopped) await subscription.stop();
        else this.subscription = subscription;
        return;
      } catch (error) {
        this.logger?.error({ err: error }, 'joining the webhook dispatcher group failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, JOIN_RETRY_MS));
      }
    }
  }

  /** Leaves the group after the message in hand; what was not recorded goes to the next member. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.joining;
    await this.subscription?.stop();
  }

  /** Records the message's deliveries (those not recorded yet), then hands the due ones to the dispatcher. */
  async handle(message: DeliveredMessage): Promise<void> {
    const event = decodePublishedEvent(message.value);
    if (!event) {
      // Handing it again would stop its partition for good: it can never become a delivery.
      this.logger?.error(
        { partition: message.partition, offset: message.offset },
        'a message on the webhook topic is not a published event; skipped',
      );
      return;
    }
    const createdMs = Date.parse(event.created_at);
    const made = await this.deliveries.exclusive(async () => {
      const docs: DeliveryDoc[] = [];
      const pending = await this.deliveries.pendingKeys(
        event.endpoints.map((endpointId) => ({ endpoint_id: endpointId, order_key: event.voucher_id })),
      );
      for (const endpointId of event.endpoints) {
        const id = deliveryIdOf(event.event_id, endpointId);
        if (await this.deliveries.get(id)) continue; // recorded when this message was handled before
        const waits = pending.has(pendingKey(endpointId, event.voucher_id));
        docs.push({
          id,
          endpoint_id: endpointId,
          event_id: event.event_id,
          event_type: event.type,
          order_key: event.voucher_id,
          seq: event.seq,
          status: 'pending',
          next_attempt_at: waits ? null : createdMs,
          attempts: [],
          created_at: event.created_at,
          created_ms: createdMs,
        });
      }
      if (docs.length > 0) {
        // the event's body once, naming every delivery of the event (those recorded before too)
        const body: PayloadDoc = {
          id: event.event_id,
          payload: event.payload,
          deliveries: event.endpoints.map((endpointId) => deliveryIdOf(event.event_id, endpointId)),
        };
        await this.deliveries.write({
          upserts: [...docs.map((doc) => ({ collection: DELIVERIES, doc })), { collection: PAYLOADS, doc: body }],
          deletes: [],
        });
      }
      return docs;
    });
    if (made.length > 0) this.onDeliveries(made);
  }
}
