/**
 * The webhook thread (see webhookThread.ts): an environment's publisher and dispatcher on their
 * own connections to the event store and the webhooks store, off the main thread.
 *
 * With Kafka settings the publisher produces to the environment's topic and the thread's
 * `BusDeliveries` member of the dispatcher group records the deliveries it consumes (decision 051).
 *
 * Messages from the main thread: `committed` (rows it just committed, handed to the publisher's
 * subscription as if this store had committed them), `call` (a change to deliveries from the API,
 * answered with `result`), `disabled` (the answer to `disable`), `hurry` (a request waits for the
 * publisher to reach a position: it is not held back for the main thread's load) and `stop`. To it: `ready`,
 * `checkpoint` (the publisher wrote a batch), `subscribers` (whether an endpoint is enabled, each
 * time that changes), `result`, `disable` (an endpoint to disable through its command handler) and
 * `failed` (it could not start); after `stop` it ends.
 */
import { parentPort, resourceLimits, workerData } from 'node:worker_threads';
import { createLogger } from '../../logger.ts';
import { systemClock } from '../../domain/clock.ts';
import { parseCidrs } from '../../domain/webhooks/targets.ts';
import type { Environment } from '../../application/context.ts';
import type { EnvironmentEvent } from '../../application/events.ts';
import { localDeliveryControl } from '../../application/webhooks/deliveries.ts';
import { DeliveryStore, type DeliveryControl } from '../../application/webhooks/deliveryStore.ts';
import { WebhookDispatcher } from '../../application/webhooks/dispatcher.ts';
import { Pacer } from '../../application/webhooks/pacer.ts';
import { WebhookPublisher } from '../../application/webhooks/publisher.ts';
import { BusDeliveries } from '../../application/webhooks/busDeliveries.ts';
import { createBus, kafkaLogTo } from '../bus/createBus.ts';
import { SqliteEventStore } from '../eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../readStore/sqliteReadStore.ts';
import { SqliteSnapshotStore } from '../snapshots/sqliteSnapshotStore.ts';
import { LOAD_SAMPLE_MS, loadReader, waitReader } from '../mainThreadLoad.ts';
import { idleThreadClass, lowerThreadPriority, nameThread } from '../threadIdentity.ts';
import { SqliteDeliveries } from './sqliteDeliveries.ts';
import { createHttpSender } from './httpSender.ts';
import type { ControlCall, FromWebhookThread, ToWebhookThread, WebhookThreadOptions } from './webhookThread.ts';

const options = workerData as WebhookThreadOptions;
const port = parentPort!;
const send = (message: FromWebhookThread) => port.postMessage(message);
const logger = createLogger(options.logLevel).child({ environment: options.environment, thread: 'webhooks' });

const run = async () => {
  nameThread(`wh-${options.environment}`);
  if (!(options.idle && (await idleThreadClass()))) {
    if (options.idle) logger.debug('the webhook thread is not in the idle scheduling class: lowering its priority');
    try {
      lowerThreadPriority(options.nice);
    } catch (error) {
      logger.warn({ err: error }, 'the webhook thread could not lower its priority');
    }
  }
  const events = SqliteEventStore.open<EnvironmentEvent>(options.eventsFile, {
    pollIntervalMs: options.pollIntervalMs,
  });
  // the publisher beside the dispatcher writes every endpoint copy, through this store
  const deliveries = new DeliveryStore(
    new SqliteDeliveries(SqliteReadStore.open(options.webhooksFile)),
  ).cacheEndpoints();
  // Only snapshot cores are read here, never entries: no filter of the stored keys.
  const snapshots = options.snapshotsFile
    ? SqliteSnapshotStore.open(options.snapshotsFile, { filterKeys: false })
    : undefined;
  let nextId = 1;
  const disabling = new Map<number, { resolve(): void; reject(error: Error): void }>();
  const dispatcher = new WebhookDispatcher({
    deliveries,
    clock: systemClock,
    sender: createHttpSender(),
    settings: { ...options.settings, allowedCidrs: parseCidrs(options.settings.allowedCidrs) },
    version: options.version,
    disable: (endpointId, reason) =>
      new Promise<void>((resolve, reject) => {
        const id = nextId++;
        disabling.set(id, { resolve, reject });
        send({ type: 'disable', id, endpointId, reason });
      }),
    logger,
  });
  const bus = options.kafka ? createBus(options.kafka, kafkaLogTo(logger)) : undefined;
  const maxDeferMs = options.settings.maxDeferMs ?? 0;
  const rest = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)); // never notified
  const pacer =
    options.mainThreadLoad && maxDeferMs > 0
      ? new Pacer({
          load: loadReader(options.mainThreadLoad),
          waiting: waitReader(options.mainThreadLoad),
          block: (ms) => void Atomics.wait(rest, 0, 0, ms),
          maxDeferMs,
          clock: systemClock,
        })
      : undefined;
  const publisher = new WebhookPublisher(
    events,
    deliveries,
    options.environment as Environment,
    (made) => dispatcher.enqueue(made),
    {
      logger,
      onAdvance: (position) => {
        send({ type: 'checkpoint', position });
        tellSubscribed();
      },
      bus,
      snapshots,
      pacer,
      firstAttempts: dispatcher,
    },
  );
  // The main thread hands over its commits only while an endpoint is enabled (webhookThread.ts).
  let subscribed: boolean | undefined;
  const tellSubscribed = () => {
    if (publisher.subscribed === subscribed) return;
    subscribed = publisher.subscribed;
    send({ type: 'subscribers', subscribed });
  };
  const fromBus = bus
    ? new BusDeliveries(bus, deliveries, options.environment, (made) => dispatcher.enqueue(made), logger)
    : undefined;
  const control = localDeliveryControl(deliveries, dispatcher);
  const perform = async (call: ControlCall): Promise<unknown> => {
    const method = control[call.op as keyof DeliveryControl] as ((...args: unknown[]) => Promise<unknown>) | undefined;
    if (typeof method !== 'function') throw new Error(`no delivery change named ${call.op}`);
    return method(...call.args);
  };
  // between callbacks the thread rests while the request thread is saturated and waits for a CPU
  const stopResting = pacer?.restInTurns(
    () => publisher.subscribed,
    () => publisher.checkpoint,
    LOAD_SAMPLE_MS,
  );
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      stopResting?.();
      await fromBus?.stop();
      await dispatcher.stop();
      await publisher.stop();
      await bus?.close().catch((error: unknown) => logger.warn({ err: error }, 'closing the Kafka bus failed'));
      for (const pending of disabling.values()) pending.reject(new Error('the webhook thread is stopping'));
      await deliveries.close();
      await snapshots?.close();
      await events.close();
      port.close(); // the thread then ends: the main thread waits for its exit
    })());
  port.on('message', (message: ToWebhookThread) => {
    switch (message.type) {
      case 'committed':
        events.offerExternalCommit(message.committed);
        break;
      case 'call':
        perform(message.call).then(
          (value) => send({ type: 'result', id: message.id, value }),
          (error: unknown) =>
            send({ type: 'result', id: message.id, error: error instanceof Error ? error.message : String(error) }),
        );
        break;
      case 'disabled': {
        const pending = disabling.get(message.id);
        disabling.delete(message.id);
        if (message.error === undefined) pending?.resolve();
        else pending?.reject(new Error(message.error));
        break;
      }
      case 'hurry':
        pacer?.hurry(message.position);
        break;
      case 'stop':
        void stop();
        break;
    }
  });
  try {
    await bus?.start([options.environment]);
    await publisher.start();
    void fromBus?.start(); // joins in the background
  } catch (error) {
    send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    await stop();
    return;
  }
  dispatcher.start();
  send({ type: 'ready', checkpoint: publisher.checkpoint, resourceLimits });
  tellSubscribed();
};

void run();
