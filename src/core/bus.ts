/**
 * The message bus port: keyed messages published to an environment's topic and consumed by
 * consumer groups, at least once, in order per key.
 *
 * - Each environment has its own topic (`topicName(prefix, environment)`), so sandbox and
 *   production never share one. A message's key (a voucher id) picks its partition: messages of
 *   one key are delivered in the order they were published.
 * - Subscribers of one group share the topic's partitions; a group member handles one message of
 *   a partition at a time and the next only after the handler resolved. A message counts as
 *   consumed (its offset committed) only after its handler resolved: a member that stops, crashes
 *   or loses its partitions in a rebalance leaves the unhandled and uncommitted messages to the
 *   member that gets the partition next (at-least-once; a handler may see a message again).
 * - A handler that rejects gets the same message again after `retryDelayMs`; later messages of
 *   its partition wait.
 */

/** A message to publish. `key` picks the partition (a voucher id: one voucher's messages stay in order). */
export interface BusMessage {
  key: string;
  value: string;
  headers?: Readonly<Record<string, string>>;
}

/** A message as delivered to a handler. */
export interface DeliveredMessage {
  environment: string;
  key: string;
  value: string;
  headers: Readonly<Record<string, string>>;
  partition: number;
  /** The message's position in its partition (a decimal integer). */
  offset: string;
}

export type BusHandler = (message: DeliveredMessage) => Promise<void>;

export interface SubscribeOptions {
  /** Members of one group share the partitions; each group consumes every message. */
  groupId: string;
  environments: readonly string[];
  handler: BusHandler;
  /** Called when the handler rejects, before the message is handed to it again. */
  onHandlerError?: (error: unknown, message: DeliveredMessage) => void;
  /** Pause before a rejected message is handed to the handler again (default 1000 ms). */
  retryDelayMs?: number;
}

export interface BusSubscription {
  /** Leaves the group: waits for the message in hand, commits what was handled, then stops. */
  stop(): Promise<void>;
}

export interface Bus {
  /** The topic holding the environment's messages. */
  topicOf(environment: string): string;
  /** Connects and creates the environments' topics that do not exist yet. */
  start(environments: readonly string[]): Promise<void>;
  /** Appends messages to the environment's topic; resolves once they are stored by the bus. */
  publish(environment: string, messages: readonly BusMessage[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<BusSubscription>;
  /** Stops every subscription of this client and disconnects. */
  close(): Promise<void>;
}

/** The bus cannot be reached or did not store the messages; publishing again later may succeed. */
export class BusUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BusUnavailableError';
  }
}

export const DEFAULT_TOPIC_PREFIX = 'voucher-events';
export const DEFAULT_RETRY_DELAY_MS = 1_000;

const TOPIC_PART = /^[A-Za-z0-9_-]{1,100}$/;

/** The topic of an environment's messages: `<prefix>.<environment>` (Kafka's legal topic characters only). */
export function topicName(prefix: string, environment: string): string {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(prefix)) throw new Error(`invalid topic prefix "${prefix}"`);
  if (!TOPIC_PART.test(environment)) throw new Error(`invalid environment name for a topic: "${environment}"`);
  return `${prefix}.${environment}`;
}
