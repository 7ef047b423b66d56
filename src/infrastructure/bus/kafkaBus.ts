/**
 * The bus on Apache Kafka through kafkajs.
 *
 * - Topics `<prefix>.<environment>` are created on start with the configured partitions and
 *   replication (default 3, or the broker count of a smaller cluster); existing topics are left
 *   as they are.
 * - The producer is idempotent with one request in flight, and waits for all in-sync replicas:
 *   a retried send neither duplicates nor reorders a key's messages.
 * - A subscription is a consumer group member reading from the earliest offset when its group
 *   has none committed. Each message's handler is awaited; its offset is resolved only after the
 *   handler resolved and committed after each fetched batch and when the member stops, so a
 *   member that dies leaves its unhandled messages to the next owner of the partition.
 * - A broker that cannot be reached at start fails `start` with an error naming the brokers;
 *   a send that fails for want of a broker rejects with `BusUnavailableError`.
 */
import type * as Kafkajs from 'kafkajs';
import type { Admin, Consumer, Kafka, KafkaConfig, LogEntry, Producer } from 'kafkajs';
import { lazyPackage } from '../../core/lazyPackage.ts';
import {
  BusUnavailableError,
  DEFAULT_RETRY_DELAY_MS,
  DEFAULT_TOPIC_PREFIX,
  topicName,
  type Bus,
  type BusMessage,
  type BusSubscription,
  type DeliveredMessage,
  type SubscribeOptions,
} from '../../core/bus.ts';

const kafkajs = lazyPackage<typeof Kafkajs>('kafkajs');

export type KafkaLogLevel = 'error' | 'warn' | 'info' | 'debug';
export type KafkaLog = (level: KafkaLogLevel, message: string, fields: Record<string, unknown>) => void;

export interface KafkaBusOptions {
  brokers: readonly string[];
  /** Partitions of a topic this bus creates (KAFKA_PARTITIONS). */
  partitions: number;
  /** Replication factor of a topic this bus creates (KAFKA_REPLICATION); default 3, or the cluster's broker count if smaller. */
  replication?: number;
  topicPrefix?: string;
  clientId?: string;
  /** Connection attempts before start gives up (kafkajs retries, default 5). */
  connectRetries?: number;
  /** Consumer group session timeout (default 30000 ms; the broker's minimum is usually 6000). */
  sessionTimeoutMs?: number;
  /** Consumer heartbeat interval (default 3000 ms). */
  heartbeatIntervalMs?: number;
  /** Partitions a member handles at the same time, one message each (default 1). */
  partitionsConsumedConcurrently?: number;
  /**
   * How long a subscription waits for its consumer to join its group while kafkajs restarts the
   * consumer after retriable errors (e.g. a coordinator still loading): default 60000 ms.
   */
  joinTimeoutMs?: number;
  /** kafkajs's log lines at warn and above (default: none). */
  log?: KafkaLog;
  /** The kafkajs client (tests pass a stand-in); default: one made from the options above. */
  kafka?: Pick<Kafka, 'admin' | 'producer' | 'consumer'>;
}

/** kafkajs's log levels by name. */
const levelsOf = ({ logLevel }: typeof Kafkajs): Record<number, KafkaLogLevel> => ({
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
});

/** Whether a kafkajs error means no broker answered (a later attempt may succeed). */
export function isUnavailable(error: unknown): boolean {
  const k = kafkajs();
  if (!(error instanceof k.KafkaJSError)) return false;
  return (
    error.retriable ||
    error instanceof k.KafkaJSNumberOfRetriesExceeded ||
    error instanceof k.KafkaJSConnectionError ||
    error instanceof k.KafkaJSRequestTimeoutError ||
    error instanceof k.KafkaJSBrokerNotFound ||
    error instanceof k.KafkaJSTimeout
  );
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const DEFAULT_REPLICATION = 3;
/** See KafkaBusOptions.joinTimeoutMs. */
const DEFAULT_JOIN_TIMEOUT_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class KafkaBus implements Bus {
  readonly topicPrefix: string;
  readonly #options: KafkaBusOptions;
  readonly #kafka: Pick<Kafka, 'admin' | 'producer' | 'consumer'>;
  readonly #subscriptions = new Set<KafkaSubscription>();
  #producer?: Producer;

  constructor(options: KafkaBusOptions) {
    if (options.brokers.length === 0) throw new Error('KafkaBus needs at least one broker');
    this.#options = options;
    this.topicPrefix = options.topicPrefix ?? DEFAULT_TOPIC_PREFIX;
    const log = options.log;
    const k = kafkajs();
    const levels = levelsOf(k);
    const config: KafkaConfig = {
      clientId: options.clientId ?? 'voucher-service',
      brokers: [...options.brokers],
      retry: { retries: options.connectRetries ?? 5 },
      logLevel: log ? k.logLevel.WARN : k.logLevel.NOTHING,
      logCreator:
        () =>
        ({ namespace, level, log: { message, ...fields } }: LogEntry) =>
          log?.(levels[level] ?? 'info', message, { namespace, ...fields }),
    };
    this.#kafka = options.kafka ?? new k.Kafka(config);
  }

  topicOf(environment: string): string {
    return topicName(this.topicPrefix, environment);
  }

  async start(environments: readonly string[]): Promise<void> {
    const admin: Admin = this.#kafka.admin();
    try {
      await this.#reach('connect to', () => admin.connect());
      const existing = new Set(await this.#reach('list the topics of', () => admin.listTopics()));
      const missing = environments.map((environment) => this.topicOf(environment)).filter((t) => !existing.has(t));
      if (missing.length > 0) await this.#createTopics(admin, missing);
      const producer = this.#kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: kafkajs().Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: false,
      });
      await this.#reach('connect a producer to', () => producer.connect());
      this.#producer = producer;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  async publish(environment: string, messages: readonly BusMessage[]): Promise<void> {
    if (!this.#producer) throw new Error('the Kafka bus is not started');
    if (messages.length === 0) return;
    const topic = this.topicOf(environment);
    try {
      await this.#producer.send({
        topic,
        acks: -1,
        messages: messages.map(({ key, value, headers }) => ({ key, value, headers: { ...headers } })),
      });
    } catch (error) {
      if (isUnavailable(error)) {
        throw new BusUnavailableError(
          `Kafka (${this.#brokers()}) did not store the messages for ${topic}: ${messageOf(error)}`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  async subscribe(options: SubscribeOptions): Promise<BusSubscription> {
    const consumer = this.#kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: this.#options.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: this.#options.heartbeatIntervalMs ?? 3_000,
      allowAutoTopicCreation: false,
      // A fetch waits at most this long for new messages (the Java consumer's default); stop()
      // waits for the fetch in flight, so kafkajs's 5000 ms would make every stop take seconds.
      maxWaitTimeInMs: 500,
    });
    const subscription = new KafkaSubscription(consumer, () => this.#subscriptions.delete(subscription));
    const environmentOf = new Map(options.environments.map((environment) => [this.topicOf(environment), environment]));
    await this.#reach('connect a consumer to', () => consumer.connect());
    this.#subscriptions.add(subscription);
    try {
      await consumer.subscribe({ topics: [...environmentOf.keys()], fromBeginning: true });
      const joinTimeoutMs = this.#options.joinTimeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS;
      const joined = new Promise<void>((resolve, reject) => {
        let lastError: unknown;
        const done = () => {
          offJoin();
          offCrash();
          clearTimeout(deadline);
        };
        const offJoin = consumer.on(consumer.events.GROUP_JOIN, () => {
          done();
          resolve();
        });
        const offCrash = consumer.on(consumer.events.CRASH, ({ payload }) => {
          lastError = payload.error;
          if (payload.restart) return; // kafkajs starts the consumer again: its join is awaited
          done();
          reject(payload.error);
        });
        const deadline = setTimeout(() => {
          done();
          reject(
            lastError ?? new (kafkajs().KafkaJSError)(`the consumer did not join its group in ${joinTimeoutMs} ms`),
          );
        }, joinTimeoutMs);
        deadline.unref();
      });
      // Awaited below once run() returned; should run() throw first, its outcome no longer matters.
      joined.catch(() => undefined);
      const retryDelayMs = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
      await consumer.run({
        partitionsConsumedConcurrently: this.#options.partitionsConsumedConcurrently ?? 1,
        eachMessage: async ({ topic, partition, message, heartbeat }) => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(message.headers ?? {})) {
            if (value !== undefined) headers[name] = String(value);
          }
          const delivered: DeliveredMessage = {
            environment: environmentOf.get(topic) ?? topic,
            key: message.key?.toString() ?? '',
            value: message.value?.toString() ?? '',
            headers,
            partition,
            offset: message.offset,
          };
          for (;;) {
            try {
              await options.handler(delivered);
              return;
            } catch (error) {
              // Thrown, the message stays unresolved: kafkajs hands it to whoever owns the partition next.
              if (subscription.stopping) throw error;
              options.onHandlerError?.(error, delivered);
              await sleep(retryDelayMs);
              await heartbeat();
            }
          }
        },
      });
      await joined;
    } catch (error) {
      await subscription.stop();
      if (isUnavailable(error)) {
        throw new BusUnavailableError(`Kafka (${this.#brokers()}) is unreachable: ${messageOf(error)}`, {
          cause: error,
        });
      }
      throw error;
    }
    return subscription;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#subscriptions].map((subscription) => subscription.stop()));
    const producer = this.#producer;
    this.#producer = undefined;
    await producer?.disconnect();
  }

  async #createTopics(admin: Admin, topics: string[]): Promise<void> {
    const { partitions } = this.#options;
    const replication =
      this.#options.replication ??
      Math.min(
        DEFAULT_REPLICATION,
        (await this.#reach('describe the cluster of', () => admin.describeCluster())).brokers.length,
      );
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: replication })),
      });
    } catch (error) {
      const errors: unknown[] = error instanceof kafkajs().KafkaJSAggregateError ? error.errors : [error];
      const types = errors.map((e) => (e instanceof kafkajs().KafkaJSProtocolError ? e.type : undefined));
      if (types.includes('INVALID_REPLICATION_FACTOR')) {
        throw new Error(
          `Kafka (${this.#brokers()}) cannot create ${topics.join(', ')} with replication factor ${replication} ` +
            `(KAFKA_REPLICATION): ${errors.map(messageOf).join('; ')}`,
          { cause: error },
        );
      }
      if (types.includes('INVALID_PARTITIONS')) {
        throw new Error(
          `Kafka (${this.#brokers()}) cannot create ${topics.join(', ')} with ${partitions} partitions ` +
            `(KAFKA_PARTITIONS): ${errors.map(messageOf).join('; ')}`,
          { cause: error },
        );
      }
      if (isUnavailable(error)) throw this.#unreachable('create topics on', error);
      throw error;
    }
  }

  /** Runs a start-up step; no broker answering becomes an error naming the brokers. */
  async #reach<T>(what: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (isUnavailable(error)) throw this.#unreachable(what, error);
      throw error;
    }
  }

  #unreachable(what: string, error: unknown): Error {
    return new BusUnavailableError(`cannot ${what} Kafka at ${this.#brokers()} (KAFKA_BROKERS): ${messageOf(error)}`, {
      cause: error,
    });
  }

  #brokers(): string {
    return this.#options.brokers.join(',');
  }
}

class KafkaSubscription implements BusSubscription {
  stopping = false;
  #stopped?: Promise<void>;

  constructor(
    private readonly consumer: Consumer,
    private readonly onEnd: () => void,
  ) {}

  stop(): Promise<void> {
    this.stopping = true;
    this.#stopped ??= (async () => {
      this.onEnd();
      await this.consumer.disconnect();
    })();
    return this.#stopped;
  }
}
