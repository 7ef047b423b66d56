import { randomUUID } from 'node:crypto';
import { InMemoryBroker, InMemoryBus } from '../../src/infrastructure/bus/inMemoryBus.ts';
import { busContract } from './busContract.ts';

const PARTITIONS = 3;

busContract(
  'InMemoryBus',
  async () => {
    const broker = new InMemoryBroker(PARTITIONS);
    const topicPrefix = `t-${randomUUID()}`;
    const client = () => new InMemoryBus({ broker, topicPrefix });
    return {
      client: async () => client(),
      partitions: async (environment) => broker.partitionCount(client().topicOf(environment)) ?? 0,
      crashable: async ({ groupId, environment, hangAt, onHandled, onHanging }) => {
        let handled = 0;
        const subscription = await client().subscribe({
          groupId,
          environments: [environment],
          handler: async (message) => {
            if (handled++ === hangAt) {
              onHanging(message);
              return new Promise<void>(() => {});
            }
            onHandled(message);
          },
        });
        return { kill: () => subscription.kill() };
      },
      cleanup: async () => {},
    };
  },
  { partitions: PARTITIONS, waitLimitMs: 5_000 },
);
