/**
 * The bus in one process's memory, with Kafka's consumption model: topics per environment split
 * into partitions by key, consumer groups sharing partitions, offsets committed per partition
 * after the handler resolved, and a rebalance whenever a member joins or leaves. For tests and
 * embedded use: nothing survives the process.
 */
import {
  DEFAULT_RETRY_DELAY_MS,
  DEFAULT_TOPIC_PREFIX,
  topicName,
  type Bus,
  type BusMessage,
  type BusSubscription,
  type DeliveredMessage,
  type SubscribeOptions,
} from '../../core/bus.ts';

interface StoredMessage {
  key: string;
  value: string;
  headers: Readonly<Record<string, string>>;
}

interface Topic {
  name: string;
  environment: string;
  partitions: StoredMessage[][];
  /** Wakes workers waiting for a message on this topic. */
  listeners: Set<() => void>;
}

interface Group {
  /** Next offset to deliver, per `topic:partition`. */
  committed: Map<string, number>;
  members: Set<Member>;
  /** Rebalances run one at a time. */
  rebalancing: Promise<void>;
}

interface Worker {
  topic: Topic;
  partition: number;
  stopRequested: boolean;
  wake: () => void;
  done: Promise<void>;
}

interface Member {
  options: SubscribeOptions;
  topics: Topic[];
  workers: Worker[];
  /** Killed: whatever its handlers do from now on is ignored, nothing more is committed. */
  dead: boolean;
}

/** A partition for `key` among `partitions` (FNV-1a). */
export function partitionOf(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % partitions;
}

/** Topics, committed offsets and group membership, shared by the clients (`InMemoryBus`) made on it. */
export class InMemoryBroker {
  readonly #topics = new Map<string, Topic>();
  readonly #groups = new Map<string, Group>();

  constructor(readonly partitions = 3) {
    if (!Number.isInteger(partitions) || partitions < 1) throw new Error('partitions must be a positive integer');
  }

  topic(name: string, environment: string): Topic {
    let topic = this.#topics.get(name);
    if (!topic) {
      topic = {
        name,
        environment,
        partitions: Array.from({ length: this.partitions }, () => []),
        listeners: new Set(),
      };
      this.#topics.set(name, topic);
    }
    return topic;
  }

  /** Partition count of a topic, undefined when it does not exist. */
  partitionCount(name: string): number | undefined {
    return this.#topics.get(name)?.partitions.length;
  }

  append(topic: Topic, messages: readonly BusMessage[]): void {
    for (const { key, value, headers } of messages) {
      topic.partitions[partitionOf(key, topic.partitions.length)]!.push({ key, value, headers: { ...headers } });
    }
    for (const listener of [...topic.listeners]) listener();
  }

  async join(member: Member): Promise<void> {
    const group = this.#group(member.options.groupId);
    group.members.add(member);
    await this.#rebalance(group, []);
  }

  async leave(member: Member): Promise<void> {
    const group = this.#group(member.options.groupId);
    if (!group.members.delete(member)) return;
    await this.#rebalance(group, [member]);
  }

  /** Drops a member as a crashed process: its messages in hand stay uncommitted. */
  async kill(member: Member): Promise<void> {
    const group = this.#group(member.options.groupId);
    member.dead = true;
    for (const worker of member.workers) {
      worker.stopRequested = true;
      worker.wake();
    }
    member.workers = [];
    if (group.members.delete(member)) await this.#rebalance(group, []);
  }

  #group(groupId: string): Group {
    let group = this.#groups.get(groupId);
    if (!group) {
      group = { committed: new Map(), members: new Set(), rebalancing: Promise.resolve() };
      this.#groups.set(groupId, group);
    }
    return group;
  }

  /** Stops every worker of the group (and of `leaving`) after its message in hand, then reassigns. */
  #rebalance(group: Group, leaving: Member[]): Promise<void> {
    group.rebalancing = group.rebalancing.then(async () => {
      const involved = [...group.members, ...leaving];
      for (const member of involved) {
        for (const worker of member.workers) {
          worker.stopRequested = true;
          worker.wake();
        }
      }
      await Promise.all(involved.flatMap((member) => member.workers.map((worker) => worker.done)));
      for (const member of involved) member.workers = [];
      const members = [...group.members];
      const topics = [...new Set(members.flatMap((member) => member.topics))];
      for (const topic of topics) {
        const subscribers = members.filter((member) => member.topics.includes(topic));
        topic.partitions.forEach((_, partition) => {
          const member = subscribers[partition % subscribers.length]!;
          member.workers.push(this.#startWorker(group, member, topic, partition));
        });
      }
    });
    return group.rebalancing;
  }

  #startWorker(group: Group, member: Member, topic: Topic, partition: number): Worker {
    const worker: Worker = { topic, partition, stopRequested: false, wake: () => {}, done: Promise.resolve() };
    const idFor = `${topic.name}:${partition}`;
    const { handler, onHandlerError, retryDelayMs = DEFAULT_RETRY_DELAY_MS } = member.options;
    /** Resolves on the next wake() or after `ms`. */
    const pause = (ms?: number): Promise<void> =>
      new Promise((resolve) => {
        const timer = ms === undefined ? undefined : setTimeout(done, ms);
        function done(): void {
          clearTimeout(timer);
          topic.listeners.delete(done);
          resolve();
        }
        worker.wake = done;
        if (ms === undefined) topic.listeners.add(done);
      });
    const running = () => !worker.stopRequested && !member.dead;
    worker.done = (async () => {
      while (running()) {
        const offset = group.committed.get(idFor) ?? 0;
        const stored = topic.partitions[partition]![offset];
        if (!stored) {
          await pause();
          continue;
        }
        const message: DeliveredMessage = {
          environment: topic.environment,
          key: stored.key,
          value: stored.value,
          headers: stored.headers,
          partition,
          offset: String(offset),
        };
        try {
          await handler(message);
        } catch (error) {
          if (member.dead) return;
          onHandlerError?.(error, message);
          if (running()) await pause(retryDelayMs);
          continue;
        }
        if (member.dead) return;
        group.committed.set(idFor, offset + 1);
      }
    })();
    return worker;
  }
}

/** A subscription of the in-memory bus; `kill()` ends it as a crashed process would end. */
export class InMemorySubscription implements BusSubscription {
  constructor(
    private readonly broker: InMemoryBroker,
    private readonly member: Member,
    private readonly onEnd: () => void,
  ) {}

  async stop(): Promise<void> {
    this.onEnd();
    await this.broker.leave(this.member);
  }

  /** Leaves the group at once: messages in hand are never committed and go to the next owner. */
  async kill(): Promise<void> {
    this.onEnd();
    await this.broker.kill(this.member);
  }
}

export interface InMemoryBusOptions {
  /** Clients made on one broker share its topics and groups (default: a broker of their own). */
  broker?: InMemoryBroker;
  topicPrefix?: string;
}

/** A client of an `InMemoryBroker`, as a process holds a Kafka client. */
export class InMemoryBus implements Bus {
  readonly broker: InMemoryBroker;
  readonly topicPrefix: string;
  readonly #subscriptions = new Set<InMemorySubscription>();
  #closed = false;

  constructor(options: InMemoryBusOptions = {}) {
    this.broker = options.broker ?? new InMemoryBroker();
    this.topicPrefix = options.topicPrefix ?? DEFAULT_TOPIC_PREFIX;
  }

  topicOf(environment: string): string {
    return topicName(this.topicPrefix, environment);
  }

  async start(environments: readonly string[]): Promise<void> {
    for (const environment of environments) this.broker.topic(this.topicOf(environment), environment);
  }

  async publish(environment: string, messages: readonly BusMessage[]): Promise<void> {
    this.#open();
    this.broker.append(this.broker.topic(this.topicOf(environment), environment), messages);
  }

  async subscribe(options: SubscribeOptions): Promise<InMemorySubscription> {
    this.#open();
    const member: Member = {
      options,
      topics: options.environments.map((environment) => this.broker.topic(this.topicOf(environment), environment)),
      workers: [],
      dead: false,
    };
    const subscription: InMemorySubscription = new InMemorySubscription(this.broker, member, () =>
      this.#subscriptions.delete(subscription),
    );
    this.#subscriptions.add(subscription);
    await this.broker.join(member);
    return subscription;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((subscription) => subscription.stop()));
  }

  #open(): void {
    if (this.#closed) throw new Error('the bus client is closed');
  }
}
