/**
 * A Kafka bus group member in a process of its own, for the contract's crash test: it reports
 * each message it handled to the parent over IPC, never resolves the handler of its
 * BUS_HANG_AT-th message (0-based), and is ended by the parent with SIGKILL.
 */
import { KafkaBus } from '../../src/infrastructure/bus/kafkaBus.ts';

const env = process.env;
const bus = new KafkaBus({
  brokers: env.KAFKA_BROKERS!.split(','),
  partitions: Number(env.BUS_PARTITIONS),
  replication: 1,
  topicPrefix: env.BUS_TOPIC_PREFIX!,
  sessionTimeoutMs: Number(env.BUS_SESSION_TIMEOUT_MS),
  heartbeatIntervalMs: Number(env.BUS_HEARTBEAT_INTERVAL_MS),
});
const hangAt = Number(env.BUS_HANG_AT);
let handled = 0;
await bus.start([env.BUS_ENVIRONMENT!]);
await bus.subscribe({
  groupId: env.BUS_GROUP_ID!,
  environments: [env.BUS_ENVIRONMENT!],
  handler: async (message) => {
    if (handled++ === hangAt) {
      process.send!({ type: 'hanging', message });
      return new Promise<void>(() => {});
    }
    process.send!({ type: 'handled', message });
  },
});
process.send!({ type: 'joined' });
