/**
 * The EventStore contract against a real EventStoreDB server, when EVENTSTORE_URL names one
 * (`docker compose up -d eventstore`, then EVENTSTORE_URL=esdb://127.0.0.1:2113?tls=false).
 * Each run writes under its own namespace, so runs never see each other's streams.
 */
import { randomUUID } from 'node:crypto';
import { openEsdbEventStore } from '../../src/infrastructure/eventStore/esdbEventStore.ts';
import { eventStoreContract } from './eventStoreContract.ts';

const url = process.env.EVENTSTORE_URL;

describe('EsdbEventStore on a server', function () {
  before(function () {
    if (!url) {
      console.log('    EVENTSTORE_URL is not set: no EventStoreDB server is configured, the contract did not run');
      this.skip();
    }
  });

  const namespace = `contract${randomUUID().slice(0, 8)}`;
  eventStoreContract(
    'EventStoreDB',
    async () => {
      const store = await openEsdbEventStore(url!, { namespace });
      return { store, cleanup: () => store.close() };
    },
    { atomicMultiStream: false },
  );
});
