import { expect } from 'chai';
import pino from 'pino';
import { startExpiryJob } from '../../src/composition.ts';
import { TestService } from '../support/harness.ts';

describe('housekeeping job (startExpiryJob)', () => {
  let service: TestService;
  let stop: (() => void) | undefined;

  before(async () => {
    service = await TestService.start();
  });
  after(async () => {
    stop?.();
    await service.stop();
  });

  it('records passed expiries and removes expired key-value records, keeping live ones', async () => {
    service.clock.set('2026-05-01T00:00:00Z');
    const v = await service.createVoucher({
      code: 'HOUSEKEEP',
      type: 'fixed',
      value: 100,
      conditions: { valid_until: '2026-05-01T01:00:00Z' },
    });
    const kv = service.sandbox.kv;
    const now = service.clock.now().getTime();
    await kv.put('quotes', 'stale', { order: { value: 1 } }, now + 60_000);
    await kv.put('idempotency', 'stale', { status: 201 }, now + 60_000);
    await kv.put('idempotency', 'live', { status: 201 }, now + 24 * 3_600_000);
    service.clock.advance(2 * 3_600_000); // past valid_until and past the two short records

    stop = startExpiryJob([service.sandbox], 20, pino({ level: 'silent' }));
    const types = async () => (await service.sandbox.events.readStream(`voucher-${v.id}`)).map((e) => e.type);
    for (let i = 0; i < 250 && !(await types()).includes('VoucherExpired'); i += 1)
      await new Promise((r) => setTimeout(r, 20));
    stop();
    await new Promise((r) => setTimeout(r, 50)); // let a pass that was running finish its purge

    expect(await types()).to.deep.equal(['VoucherCreated', 'VoucherExpired']);
    // the expired rows are gone from the file, not only hidden from reads
    expect(await kv.purgeExpired(service.clock.now().getTime())).to.equal(0);
    expect(await kv.get('idempotency', 'live')).to.deep.equal({ status: 201 });
  });

  it('removes webhook deliveries that ended more than 30 days ago, keeping pending and recent ones', async () => {
    const store = service.sandbox.webhooks.deliveries!;
    const now = service.clock.now().getTime();
    const day = 24 * 3_600_000;
    const doc = (id: string, status: 'pending' | 'succeeded' | 'failed', age: number) => ({
      id,
      endpoint_id: 'we_Housekeeping000001',
      event_id: `evt_${id}`,
      event_type: 'voucher.created',
      order_key: id,
      seq: 0,
      payload: '{}',
      status,
      next_attempt_at: status === 'pending' ? now + day : null,
      attempts: [],
      created_at: new Date(now - age).toISOString(),
      created_ms: now - age,
    });
    await store.write({
      upserts: [
        doc('msg_oldok', 'succeeded', 31 * day),
        doc('msg_oldfailed', 'failed', 31 * day),
        doc('msg_oldpending', 'pending', 31 * day),
        doc('msg_recent', 'succeeded', 29 * day),
      ].map((d) => ({ collection: 'wh_deliveries', doc: d })),
    });
    stop = startExpiryJob([service.sandbox], 20, pino({ level: 'silent' }));
    for (let i = 0; i < 250 && (await store.get('msg_oldok')); i += 1) await new Promise((r) => setTimeout(r, 20));
    stop();
    await new Promise((r) => setTimeout(r, 50));
    const left = await Promise.all(
      ['msg_oldok', 'msg_oldfailed', 'msg_oldpending', 'msg_recent'].map((id) => store.get(id)),
    );
    expect(left.map((d) => d?.id ?? null)).to.deep.equal([null, null, 'msg_oldpending', 'msg_recent']);
  });
});
