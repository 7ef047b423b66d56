import type { Bus } from '../../core/bus.ts';
import { InMemoryBus } from './inMemoryBus.ts';
import type { Logger } from 'pino';
import { KafkaBus, type KafkaLog } from './kafkaBus.ts';

export interface BusSettings {
  brokers: readonly string[];
  partitions: number;
  replication?: number;
  topicPrefix?: string;
}

/** The Kafka bus on `kafka`'s brokers, or, without them, a bus in this process's memory. */
export function createBus(kafka: BusSettings | undefined, log?: KafkaLog): Bus {
  if (!kafka) return new InMemoryBus();
  return new KafkaBus({ ...kafka, log });
}

/** The Kafka client's log lines on `logger`, each message prefixed `kafka: `. */
export const kafkaLogTo =
  (logger: Logger): KafkaLog =>
  (level, message, fields) =>
    logger[level](fields, `kafka: ${message}`);
