/**
 * Disk that one key can fill: what a VoucherApplied keeps of a 1,000-item order (a bounded
 * summary and the order's fingerprint, not the items), what a quote keeps, and the per-key quotas
 * on outstanding quotes and on exports (429 QUOTA_EXCEEDED naming the quota, freed by the clock).
 */
import { expect } from 'chai';
import { TestService } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';
import { waitForExport } from '../support/analyticsFixture.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** 1,000 lines with the longest ids and categories the schema allows (128 characters). */
const long = (prefix: string, i: number) => `${prefix}${String(i).padStart(4, '0')}`.padEnd(128, 'x');
const bigOrder = (id?: string) => ({
  ...(id !== undefined ? { id } : {}),
  value: 100_000,
  currency: 'EUR',
  items: Array.from({ length: 1_000 }, (_, i) => ({
    id: long('item-', i),
    price: 100,
    quantity: 1,
    category: long('cat-', i),
  })),
});

describe('HTTP disk bounds: applied orders, quotes and exports per key', function () {
  this.timeout(60_000);
  let service: TestService;
  let release: () => void = () => undefined;
  /** Export jobs wait for this gate (a test opens it). */
  let gate: Promise<void> = Promise.resolve();

  before(async () => {
    service = await TestService.start({
      quotas: { outstandingQuotes: 2, pendingExports: 1, exportFiles: 2 },
      beforeExportJob: () => gate,
      projectors: 'inline',
    });
    await service.createVoucher({ code: 'BIG10', type: 'percentage', value: 10 });
  });
  after(async () => {
    release();
    await service.stop();
  });

  /** A new sandbox key with every scope: each test counts against its own quotas. */
  const newKey = async (name: string): Promise<string> => (await service.embedded.keys.create('sandbox', name)).key;

  describe('VoucherApplied of a 1,000-item order', () => {
    const appliedEvents = async (orderId: string) =>
      (await service.sandbox.events.readAll()).filter((e) => e.type === 'VoucherApplied' && e.data.orderId === orderId);

    it('is stored in a few KB, with a summary of the items and the order fingerprint', async () => {
      const res = await service.post('/v1/vouchers/apply', { code: 'BIG10', order_id: 'ord-big', order: bigOrder() });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(res.body).to.include({ discount_amount: 10_000, final_amount: 90_000 });
      const [event] = await appliedEvents('ord-big');
      if (event?.type !== 'VoucherApplied') throw new Error('no VoucherApplied for ord-big');
      // with every item (and every line of applied_to) it was 507,352 bytes
      expect(JSON.stringify(event.data).length).to.be.below(8_000);
      expect(event.data).not.to.have.property('orderItems');
      expect(event.data.orderSummary).to.deep.equal({
        itemCount: 1_000,
        itemsValue: 100_000,
        appliedLineCount: 1_000,
        appliedLinesValue: 100_000,
      });
      expect(event.data.appliedTo).to.have.length(20);
      expect(event.data.orderFingerprint).to.match(/^[A-Za-z0-9_-]{22}$/);
    });

    it('a repeat with the same order is recognised (200, the same application); another order is refused (409)', async () => {
      const again = await service.post('/v1/vouchers/apply', { code: 'BIG10', order_id: 'ord-big', order: bigOrder() });
      expect(again.status, JSON.stringify(again.body)).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      const other = bigOrder();
      other.items[999] = { ...other.items[999]!, quantity: 2 };
      expectError(
        await service.post('/v1/vouchers/apply', { code: 'BIG10', order_id: 'ord-big', order: other }),
        409,
        'VOUCHER_ALREADY_APPLIED',
      );
      expect(await appliedEvents('ord-big')).to.have.length(1);
    });

    it('applied from a quote, the same order sent again is recognised as the same', async () => {
      const key = await newKey('quote-repeat');
      const validated = await service.post(
        '/v1/vouchers/validate',
        { code: 'BIG10', order: bigOrder('ord-quoted') },
        { key },
      );
      expect(validated.status, JSON.stringify(validated.body)).to.equal(200);
      const applied = await service.post('/v1/vouchers/apply', { code: 'BIG10', order_id: 'ord-quoted' }, { key });
      expect(applied.status, JSON.stringify(applied.body)).to.equal(201);
      const repeat = await service.post(
        '/v1/vouchers/apply',
        { code: 'BIG10', order_id: 'ord-quoted', order: bigOrder() },
        { key },
      );
      expect(repeat.status, JSON.stringify(repeat.body)).to.equal(200);
      expect(repeat.body.id).to.equal(applied.body.id);
    });
  });

  describe('quotes', () => {
    it('a quote keeps the order lines as tuples: under half the bytes of the order for short item ids', async () => {
      const key = await newKey('quote-size');
      const order = {
        id: 'ord-short',
        value: 100_000,
        items: Array.from({ length: 1_000 }, (_, i) => ({ id: `sku-${i}`, price: 100, quantity: 1 })),
      };
      expect((await service.post('/v1/vouchers/validate', { code: 'BIG10', order }, { key })).status).to.equal(200);
      const voucherId = (await service.get('/v1/vouchers?limit=100')).body.data.find((v: any) => v.code === 'BIG10').id;
      const kept = await service.sandbox.kv.get('quotes', `${voucherId}:ord-short`);
      expect(kept).to.not.equal(null);
      expect(JSON.stringify(kept).length).to.be.below(JSON.stringify({ order }).length / 2);
      // and apply prices exactly the order validated
      const applied = await service.post('/v1/vouchers/apply', { code: 'BIG10', order_id: 'ord-short' }, { key });
      expect(applied.body).to.include({ discount_amount: 10_000, final_amount: 90_000 });
    });

    it('outstanding_quotes: the quote past the quota answers 429 QUOTA_EXCEEDED; replacing a kept one does not count; expiry frees a place', async () => {
      const key = await newKey('quote-quota');
      const validate = (orderId: string, as = key) =>
        service.post('/v1/vouchers/validate', { code: 'BIG10', order: { id: orderId, value: 5_000 } }, { key: as });
      const start = service.clock.now().getTime();
      expect((await validate('q-1')).status).to.equal(200);
      service.clock.advance(MINUTE);
      expect((await validate('q-2')).status).to.equal(200);
      const refused = await validate('q-3');
      expectError(refused, 429, 'QUOTA_EXCEEDED', {
        quota: 'outstanding_quotes',
        limit: 2,
        current: 2,
        reset_at: new Date(start + 30 * MINUTE).toISOString().replace('.000', ''),
      });
      expect(refused.headers.get('retry-after')).to.equal(String(29 * 60));
      expect(refused.body.error.message).to.match(/outstanding_quotes/);
      // the same order id again replaces its quote (now kept until start + 33 min); a validate
      // without order.id keeps none
      service.clock.advance(2 * MINUTE);
      expect((await validate('q-1')).status).to.equal(200);
      const noQuote = await service.post('/v1/vouchers/validate', { code: 'BIG10', order: { value: 5_000 } }, { key });
      expect(noQuote.status).to.equal(200);
      // nothing was kept for the refused one: apply has no order to take
      expectError(
        await service.post('/v1/vouchers/apply', { code: 'BIG10', order_id: 'q-3' }, { key }),
        400,
        'INVALID_REQUEST',
      );
      // other keys have quotas of their own
      expect((await validate('q-3', await newKey('quote-quota-other'))).status).to.equal(200);
      // at start + 31 min q-2 has expired, q-1 not yet: one place
      service.clock.advance(28 * MINUTE);
      expect((await validate('q-3')).status).to.equal(200);
      expectError(await validate('q-4'), 429, 'QUOTA_EXCEEDED', {
        quota: 'outstanding_quotes',
        limit: 2,
        current: 2,
        reset_at: new Date(start + 33 * MINUTE).toISOString().replace('.000', ''),
      });
    });
  });

  describe('exports', () => {
    it('pending_exports and export_files: 429 QUOTA_EXCEEDED naming the quota, freed by completion and by expiry', async () => {
      const key = await newKey('export-quota');
      const voucherId = (await service.get('/v1/vouchers?limit=100')).body.data.find((v: any) => v.code === 'BIG10').id;
      const create = (as = key) =>
        service.post('/v1/analytics/export', { voucher_ids: [voucherId], metrics: ['uses'] }, { key: as });
      const status = (id: string) => service.get(`/v1/analytics/export/${id}`, { key });
      gate = new Promise((resolve) => {
        release = resolve;
      });

      const first = await create();
      expect(first.status, JSON.stringify(first.body)).to.equal(202);
      const pending = await create();
      expectError(pending, 429, 'QUOTA_EXCEEDED', {
        quota: 'pending_exports',
        limit: 1,
        current: 1,
        reset_at: first.body.estimated_completion,
      });
      expect(Number(pending.headers.get('retry-after'))).to.be.above(0);
      // another key is not held back by this one's exports
      expect((await create(await newKey('export-quota-other'))).status).to.equal(202);

      release();
      const firstDone = await waitForExport(() => status(first.body.export_id));
      expect(firstDone.status).to.equal('completed');
      service.clock.advance(HOUR);
      const second = await create();
      expect(second.status, JSON.stringify(second.body)).to.equal(202);
      expect((await waitForExport(() => status(second.body.export_id))).status).to.equal('completed');

      // two files kept: the third waits for the first file's expiry, 24 h after its completion
      const files = await create();
      expectError(files, 429, 'QUOTA_EXCEEDED', {
        quota: 'export_files',
        limit: 2,
        current: 2,
        reset_at: firstDone.expires_at,
      });
      expect(files.headers.get('retry-after')).to.equal(String(23 * 3600));
      service.clock.advance(23 * HOUR);
      const third = await create();
      expect(third.status, JSON.stringify(third.body)).to.equal(202);
      expect((await waitForExport(() => status(third.body.export_id))).status).to.equal('completed');
    });
  });
});
