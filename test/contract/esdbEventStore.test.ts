/**
 * The EventStore contract on the EventStoreDB adapter:
 *
 * - against a real server when EVENTSTORE_URL names one (`docker compose up -d eventstore`, then
 *   EVENTSTORE_URL='esdb://127.0.0.1:2113?tls=false'); each run writes under its own namespace;
 * - always, against an in-memory stand-in for the client (test/support/fakeEsdbClient.ts) on a
 *   log shared with another namespace and system events: the adapter's own logic (namespaces,
 *   pages, positions, batches) under the whole suite, not the server's behaviour.
 */
import { randomUUID } from 'node:crypto';
import { EsdbEventStore, openEsdbEventStore } from '../../src/infrastructure/eventStore/esdbEventStore.ts';
import { FakeEsdbClient } from '../support/fakeEsdbClient.ts';
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

describe('EsdbEventStore on an in-memory stand-in for the client (no server)', function () {
  const client = new FakeEsdbClient({ noise: true });
  eventStoreContract(
    'EventStoreDB adapter, fake client',
    async () => {
      // Small pages, so that $all scans cross page boundaries.
      const store = new EsdbEventStore(client.asClient(), { namespace: 'sandbox', pageSize: 7 });
      return { store, cleanup: () => store.close() };
    },
    { atomicMultiStream: false },
  );
});
