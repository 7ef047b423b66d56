/** Pending and failed webhook deliveries per endpoint, counted in the deliveries store (GET /metrics). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DELIVERIES, DeliveryStore, ENDPOINTS } from '../../src/application/webhooks/deliveryStore.ts';
import { webhookQueueStats } from '../../src/application/webhooks/queueStats.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';

describe('webhookQueueStats', () => {
  let dir: string;
  let deliveries: DeliveryStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-queue-'));
    deliveries = new DeliveryStore(new SqliteDeliveries(SqliteReadStore.open(path.join(dir, 'webhooks.db'))));
    await deliveries.start();
  });
  afterEach(async () => {
    await deliveries.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('counts each live endpoint’s pending and failed deliveries; succeeded ones and deleted endpoints are left out', async () => {
    const delivery = (id: string, endpoint_id: string, status: string) => ({
      collection: DELIVERIES,
      doc: {
        id,
        endpoint_id,
        event_id: `evt_${id}`,
        event_type: 'voucher.applied',
        status,
        order_key: 'v',
        seq: 1,
        next_attempt_at: null,
        attempts: [],
        created_at: '1970-01-01T00:00:00Z',
        created_ms: 1,
      },
    });
    await deliveries.write({
      upserts: [
        { collection: ENDPOINTS, doc: { id: 'we_a', deleted: false } },
        { collection: ENDPOINTS, doc: { id: 'we_b', deleted: false } },
        { collection: ENDPOINTS, doc: { id: 'we_gone', deleted: true } },
        delivery('msg_1', 'we_a', 'pending'),
        delivery('msg_2', 'we_a', 'pending'),
        delivery('msg_3', 'we_a', 'failed'),
        delivery('msg_4', 'we_a', 'succeeded'),
        delivery('msg_5', 'we_b', 'succeeded'),
        delivery('msg_6', 'we_gone', 'pending'),
      ],
    });
    const stats = await webhookQueueStats(deliveries);
    expect(stats.sort((x, y) => x.endpointId.localeCompare(y.endpointId))).to.deep.equal([
      { endpointId: 'we_a', pending: 2, failed: 1 },
      { endpointId: 'we_b', pending: 0, failed: 0 },
    ]);
  });
});
