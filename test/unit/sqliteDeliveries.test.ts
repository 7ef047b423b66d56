/** The SQLite delivery storage's own behaviour beyond the contract: deliveries stored as documents by earlier builds move into its table. */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { DELIVERIES, type DeliveryDoc } from '../../src/domain/webhooks/deliveryStorage.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { PENDING_KEYS, SqliteDeliveries } from '../../src/infrastructure/webhooks/sqliteDeliveries.ts';
import { tempFileEach } from '../support/tempFiles.ts';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const doc = (id: string, fields: Partial<DeliveryDoc>): DeliveryDoc => ({
  id,
  endpoint_id: 'we_a',
  event_id: `evt_${id}`,
  event_type: 'voucher.applied',
  order_key: 'v1',
  seq: 1,
  status: 'pending',
  next_attempt_at: T0,
  attempts: [],
  created_at: '2026-03-01T00:00:00Z',
  created_ms: T0,
  ...fields,
});

describe('SqliteDeliveries', () => {
  const file = tempFileEach('voucher-deliveries-', 'webhooks.db');

  it('moves the deliveries an earlier build stored as documents into its table when it opens the file, once, the documents winning', async () => {
    const old = [
      doc('msg_1', { seq: 1, payload: '{"id":"evt_msg_1"}' }), // due, holding its own body
      doc('msg_2', { seq: 2, next_attempt_at: null }), // waiting behind msg_1
      doc('msg_3', {
        seq: 3,
        order_key: 'v2',
        status: 'failed',
        next_attempt_at: null,
        attempts: [{ at: '2026-03-01T00:00:01Z', response_status: 500, duration_ms: 4 }],
        failure_reason: 'endpoint disabled',
      }),
    ];
    // msg_3 as a later build stored it before the file went back to an earlier one, which then ended it
    const later = new SqliteDeliveries(SqliteReadStore.open(file()));
    await later.write({ upserts: [{ collection: DELIVERIES, doc: doc('msg_3', { seq: 3, order_key: 'v2' }) }] });
    await later.close();
    const before = SqliteReadStore.open(file());
    await before.writeBatch({
      upserts: [
        ...old.map((d) => ({ collection: DELIVERIES, doc: d })),
        { collection: 'wh_payloads', doc: { id: 'evt_msg_2', payload: '{}', deliveries: ['msg_2'] } },
      ],
      checkpoint: { name: 'webhook_publisher.v1', position: 3 },
    });
    await before.close();

    const storage = new SqliteDeliveries(SqliteReadStore.open(file()));
    for (const d of old) expect(await storage.get(d.id)).to.deep.equal(d);
    expect((await storage.due(T0, 10)).map((d) => d.id)).to.deep.equal(['msg_1']);
    expect((await storage.firstWaiting('we_a', 'v1'))?.id).to.equal('msg_2');
    expect(await storage.count({ status: 'failed' })).to.equal(1);
    // the other collections are where they were
    expect(await storage.store.getCheckpoint('webhook_publisher.v1')).to.equal(3);
    expect(await storage.store.get('wh_payloads', 'evt_msg_2')).to.not.equal(null);
    // a second connection to the file (the API's beside the webhook thread's) finds them in the table too
    const second = new SqliteDeliveries(SqliteReadStore.open(file()));
    expect(await second.count({})).to.equal(3);
    await second.close();
    await storage.close();

    const raw = new Database(file(), { readonly: true });
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    raw.close();
    expect(tables).to.include('wh_delivery');
    expect(tables).to.not.include(`rm_${DELIVERIES}`);
  });

  it('keeps the dispatcher’s and publisher’s lookups on the partial indexes of pending deliveries', () => {
    const storage = new SqliteDeliveries(SqliteReadStore.open(file()));
    const db = storage.store.database;
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join('; ');
    expect(plan(PENDING_KEYS.replace('?', `'[["a","v"]]'`))).to.match(
      /SEARCH wh_delivery .*USING COVERING INDEX wh_delivery_pending_key \(endpoint_id=\? AND order_key=\?\)/,
    );
    expect(
      plan("SELECT * FROM wh_delivery WHERE status = 'pending' AND next_attempt_at <= 5 ORDER BY next_attempt_at"),
    ).to.match(/USING INDEX wh_delivery_pending_due/);
    void storage.close();
  });
});
