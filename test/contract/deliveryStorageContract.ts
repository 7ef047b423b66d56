/**
 * The DeliveryStorage contract (src/domain/webhooks/deliveryStorage.ts), shared by its
 * implementations: the SQLite table (always), the ReadStore documents over the in-memory MongoDB
 * stand-in (always) and over a real MongoDB server (MONGODB_URL).
 */
import { expect } from 'chai';
import { LEASES } from '../../src/core/lease.ts';
import { FencedWriteError, type WriteBatch } from '../../src/core/readStore.ts';
import { DELIVERIES, type DeliveryDoc, type DeliveryStorage } from '../../src/domain/webhooks/deliveryStorage.ts';

export type DeliveryStorageFactory = () => Promise<{ storage: DeliveryStorage; cleanup(): Promise<void> }>;

const T0 = Date.parse('2026-03-01T00:00:00Z');

const delivery = (
  id: string,
  fields: Partial<DeliveryDoc> & Pick<DeliveryDoc, 'endpoint_id' | 'order_key' | 'seq'>,
): DeliveryDoc => ({
  id,
  event_id: `evt_${fields.seq}`,
  event_type: 'voucher.applied',
  status: 'pending',
  next_attempt_at: T0,
  attempts: [],
  created_at: new Date(T0 + fields.seq * 1_000).toISOString().slice(0, 19) + 'Z',
  created_ms: T0 + fields.seq * 1_000,
  ...fields,
});

const upserts = (...docs: DeliveryDoc[]): WriteBatch => ({
  upserts: docs.map((doc) => ({ collection: DELIVERIES, doc })),
});

const ids = (docs: readonly DeliveryDoc[]) => docs.map((d) => d.id);

const rejection = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  return expect.fail('expected a rejection');
};

export function deliveryStorageContract(name: string, factory: DeliveryStorageFactory): void {
  describe(`DeliveryStorage contract: ${name}`, () => {
    let storage: DeliveryStorage;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ storage, cleanup } = await factory());
      await storage.start();
    });
    afterEach(async () => cleanup());

    it('stores a delivery as written and gives it back, its optional fields only when set', async () => {
      const full = delivery('msg_1', {
        endpoint_id: 'we_a',
        order_key: 'v1',
        seq: 1,
        payload: '{"id":"evt_1"}',
        status: 'failed',
        next_attempt_at: null,
        attempts: [
          { at: '2026-03-01T00:00:01Z', response_status: 500, duration_ms: 12 },
          { at: '2026-03-01T00:00:07Z', error: 'timeout', duration_ms: 15_000 },
        ],
        failure_reason: 'endpoint disabled',
      });
      const lean = delivery('msg_2', { endpoint_id: 'we_a', order_key: 'v1', seq: 2 });
      await storage.write(upserts(full, lean));
      expect(await storage.get('msg_1')).to.deep.equal(full);
      expect(await storage.get('msg_2')).to.deep.equal(lean);
      expect(await storage.get('msg_3')).to.equal(null);
      const many = await storage.getMany(['msg_2', 'msg_3', 'msg_1', 'msg_2']);
      expect([...many.keys()].sort()).to.deep.equal(['msg_1', 'msg_2']);
      expect(many.get('msg_1')).to.deep.equal(full);
      expect(await storage.getMany([])).to.deep.equal(new Map());
    });

    it('replaces a delivery on a second write, and deletes it', async () => {
      const first = delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1, failure_reason: 'x' });
      await storage.write(upserts(first));
      const { failure_reason: _gone, ...rest } = first;
      const ended: DeliveryDoc = {
        ...rest,
        status: 'succeeded',
        next_attempt_at: null,
        attempts: [{ at: '2026-03-01T00:00:01Z', response_status: 204, duration_ms: 3 }],
      };
      await storage.write(upserts(ended));
      expect(await storage.get('msg_1')).to.deep.equal(ended);
      await storage.write({ deletes: [{ collection: DELIVERIES, id: 'msg_1' }] });
      expect(await storage.get('msg_1')).to.equal(null);
    });

    it("tells which keys have a pending delivery, and gives a key's first waiting one by seq", async () => {
      await storage.write(
        upserts(
          delivery('msg_1', {
            endpoint_id: 'we_a',
            order_key: 'v1',
            seq: 1,
            status: 'succeeded',
            next_attempt_at: null,
          }),
          delivery('msg_2', { endpoint_id: 'we_a', order_key: 'v1', seq: 2 }),
          delivery('msg_4', { endpoint_id: 'we_a', order_key: 'v1', seq: 4, next_attempt_at: null }),
          delivery('msg_3', { endpoint_id: 'we_a', order_key: 'v1', seq: 3, next_attempt_at: null }),
          delivery('msg_5', { endpoint_id: 'we_b', order_key: 'v2', seq: 5, status: 'failed', next_attempt_at: null }),
        ),
      );
      const keys = (...pairs: Array<[string, string]>) =>
        pairs.map(([endpoint, key]) => ({ endpoint_id: endpoint, order_key: key }));
      expect(
        await storage.pendingKeys(keys(['we_a', 'v1'], ['we_b', 'v1'], ['we_b', 'v2'], ['we_a', 'v1'], ['we_a', 'v9'])),
      ).to.deep.equal(new Set(['we_a/v1'])); // failed (we_b/v2) is not pending; a key asked twice is answered once
      expect(await storage.pendingKeys(keys(['we_b', 'v2']))).to.deep.equal(new Set());
      expect(await storage.pendingKeys([])).to.deep.equal(new Set());
      expect((await storage.firstWaiting('we_a', 'v1'))?.id).to.equal('msg_3');
      expect(await storage.firstWaiting('we_a', 'v2')).to.equal(null);
    });

    it('answers a batch of a thousand keys in one call, keys with quotes and non-ASCII characters too', async () => {
      const odd = 'v"\\é/1';
      const stored: DeliveryDoc[] = [];
      for (let i = 0; i < 200; i += 1)
        stored.push(
          delivery(`msg_${i}`, {
            endpoint_id: `we_${i % 3}`,
            order_key: i === 0 ? odd : `v${i}`,
            seq: i + 1,
            ...(i % 4 === 3 ? { status: 'succeeded' as const, next_attempt_at: null } : {}),
          }),
        );
      await storage.write(upserts(...stored));
      const asked = Array.from({ length: 1_000 }, (_, i) => ({
        endpoint_id: `we_${i % 3}`,
        order_key: i === 0 ? odd : `v${i}`,
      }));
      const expected = new Set(
        stored.filter((d) => d.status === 'pending').map((d) => `${d.endpoint_id}/${d.order_key}`),
      );
      expect(expected.size).to.equal(150);
      expect(await storage.pendingKeys(asked)).to.deep.equal(expected);
    });

    it('gives the due pending deliveries earliest first, up to the limit, and when the next one falls due', async () => {
      await storage.write(
        upserts(
          delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1, next_attempt_at: T0 + 30 }),
          delivery('msg_2', { endpoint_id: 'we_a', order_key: 'v2', seq: 2, next_attempt_at: T0 + 10 }),
          delivery('msg_3', { endpoint_id: 'we_a', order_key: 'v3', seq: 3, next_attempt_at: T0 + 20 }),
          delivery('msg_4', { endpoint_id: 'we_a', order_key: 'v3', seq: 4, next_attempt_at: null }),
          delivery('msg_5', { endpoint_id: 'we_a', order_key: 'v5', seq: 5, next_attempt_at: T0 + 60_000 }),
          delivery('msg_6', { endpoint_id: 'we_a', order_key: 'v6', seq: 6, status: 'failed', next_attempt_at: T0 }),
        ),
      );
      expect(ids(await storage.due(T0 + 30, 10))).to.deep.equal(['msg_2', 'msg_3', 'msg_1']);
      expect(ids(await storage.due(T0 + 30, 2))).to.deep.equal(['msg_2', 'msg_3']);
      expect(ids(await storage.due(T0, 10))).to.deep.equal([]);
      expect(await storage.nextDueAt(T0 + 30)).to.equal(T0 + 60_000);
      expect(await storage.nextDueAt(T0 + 60_000)).to.equal(null);
    });

    it('lists newest first by endpoint and status, in pages, and counts the same', async () => {
      const docs = [1, 2, 3, 4, 5, 6].map((seq) =>
        delivery(`msg_${seq}`, {
          endpoint_id: seq % 2 === 0 ? 'we_a' : 'we_b',
          order_key: `v${seq}`,
          seq,
          status: seq <= 2 ? 'failed' : seq <= 4 ? 'succeeded' : 'pending',
          ...(seq <= 4 ? { next_attempt_at: null } : {}),
        }),
      );
      // two of one second: newest first within it by seq
      docs.push(delivery('msg_7', { endpoint_id: 'we_a', order_key: 'v7', seq: 7, created_ms: T0 + 6_000 }));
      await storage.write(upserts(...docs));
      expect(ids(await storage.list({ endpoint_id: 'we_a' }, { skip: 0, limit: 10 }))).to.deep.equal([
        'msg_7',
        'msg_6',
        'msg_4',
        'msg_2',
      ]);
      expect(ids(await storage.list({ endpoint_id: 'we_a' }, { skip: 1, limit: 2 }))).to.deep.equal(['msg_6', 'msg_4']);
      expect(ids(await storage.list({ endpoint_id: 'we_a', status: 'pending' }, { skip: 0, limit: 10 }))).to.deep.equal(
        ['msg_7', 'msg_6'],
      );
      expect(ids(await storage.list({ status: 'failed' }, { skip: 0, limit: 10 }))).to.deep.equal(['msg_2', 'msg_1']);
      expect(await storage.count({ endpoint_id: 'we_a' })).to.equal(4);
      expect(await storage.count({ endpoint_id: 'we_b', status: 'succeeded' })).to.equal(1);
      expect(await storage.count({ status: 'pending' })).to.equal(3);
      expect(await storage.count({})).to.equal(7);
    });

    it('finds an endpoint’s failed deliveries since a time by seq, and the ended ones before a time', async () => {
      await storage.write(
        upserts(
          delivery('msg_3', { endpoint_id: 'we_a', order_key: 'v1', seq: 3, status: 'failed', next_attempt_at: null }),
          delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1, status: 'failed', next_attempt_at: null }),
          delivery('msg_2', {
            endpoint_id: 'we_a',
            order_key: 'v2',
            seq: 2,
            status: 'succeeded',
            next_attempt_at: null,
          }),
          delivery('msg_4', { endpoint_id: 'we_b', order_key: 'v1', seq: 4, status: 'failed', next_attempt_at: null }),
          delivery('msg_5', { endpoint_id: 'we_a', order_key: 'v5', seq: 5 }),
        ),
      );
      expect(ids(await storage.failedSince('we_a', T0 + 1_000, 10))).to.deep.equal(['msg_1', 'msg_3']);
      expect(ids(await storage.failedSince('we_a', T0 + 2_000, 10))).to.deep.equal(['msg_3']);
      expect(ids(await storage.failedSince('we_a', T0, 1))).to.deep.equal(['msg_1']);
      expect(ids(await storage.endedBefore(T0 + 4_000, 10)).sort()).to.deep.equal(['msg_1', 'msg_2', 'msg_3']);
      expect(ids(await storage.endedBefore(T0 + 10_000, 10)).sort()).to.deep.equal([
        'msg_1',
        'msg_2',
        'msg_3',
        'msg_4',
      ]);
      expect(await storage.endedBefore(T0 + 10_000, 2)).to.have.length(2);
    });

    it('writes deliveries, other collections and the checkpoint together, or nothing of a batch with a bad delivery', async () => {
      await storage.write({
        ...upserts(delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1 })),
        upserts: [
          { collection: DELIVERIES, doc: delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1 }) },
          { collection: 'wh_payloads', doc: { id: 'evt_1', payload: '{}', deliveries: ['msg_1'] } },
        ],
        checkpoint: { name: 'webhook_publisher.v1', position: 1 },
      });
      expect(await storage.store.get('wh_payloads', 'evt_1')).to.deep.equal({
        id: 'evt_1',
        payload: '{}',
        deliveries: ['msg_1'],
      });
      expect(await storage.store.getCheckpoint('webhook_publisher.v1')).to.equal(1);
      const bad = { id: 'msg_bad', endpoint_id: 'we_a', status: 'sent' } as unknown as DeliveryDoc;
      await rejection(
        storage.write({
          upserts: [
            { collection: DELIVERIES, doc: delivery('msg_2', { endpoint_id: 'we_a', order_key: 'v2', seq: 2 }) },
            { collection: 'wh_payloads', doc: { id: 'evt_2', payload: '{}', deliveries: ['msg_2'] } },
            { collection: DELIVERIES, doc: bad },
          ],
          checkpoint: { name: 'webhook_publisher.v1', position: 2 },
        }),
      );
      expect(await storage.get('msg_2')).to.equal(null);
      expect(await storage.store.get('wh_payloads', 'evt_2')).to.equal(null);
      expect(await storage.store.getCheckpoint('webhook_publisher.v1')).to.equal(1);
    });

    it('writes a fenced batch only while the fence holds, deliveries included', async () => {
      await storage.store.writeBatch({
        upserts: [{ collection: LEASES, doc: { id: 'dispatcher', holder: 'p1', token: 'tok_1', expiresAt: T0 } }],
      });
      const fence = (value: string) => ({ collection: LEASES, id: 'dispatcher', field: 'token', value });
      await storage.write({
        ...upserts(delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1 })),
        fence: fence('tok_1'),
      });
      expect(await storage.get('msg_1')).to.not.equal(null);
      const refused = await rejection(
        storage.write({
          ...upserts(
            delivery('msg_1', { endpoint_id: 'we_a', order_key: 'v1', seq: 1, status: 'succeeded' }),
            delivery('msg_2', { endpoint_id: 'we_a', order_key: 'v2', seq: 2 }),
          ),
          deletes: [{ collection: DELIVERIES, id: 'msg_1' }],
          checkpoint: { name: 'webhook_publisher.v1', position: 9 },
          fence: fence('tok_0'),
        }),
      );
      expect(refused).to.be.instanceOf(FencedWriteError);
      expect(await storage.get('msg_1')).to.include({ status: 'pending' });
      expect(await storage.get('msg_2')).to.equal(null);
      expect(await storage.store.getCheckpoint('webhook_publisher.v1')).to.equal(0);
    });
  });
}
