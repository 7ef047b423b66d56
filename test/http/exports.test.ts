/**
 * Exports in-process: each format parsed back (csv-parse, JSON, exceljs) and compared with the
 * performance endpoint's daily breakdown; the status record; unknown vouchers; the 100,000-row
 * limit; expiry (download 410, file removed) by the injected clock and by the sweeper.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';
import { buildFixture, NOW, waitForExport, type Fixture } from '../support/analyticsFixture.ts';

const ALL = ['uses', 'discount', 'orders', 'conversion_rate', 'avg_order_value', 'revenue_impact', 'unique_customers'];
const WINDOW = { start: '2026-03-02', end: '2026-03-08' };
const DAYS = ['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06', '2026-03-07', '2026-03-08'];

describe('HTTP exports', function () {
  this.timeout(120_000);
  let service: TestService;
  let fx: Fixture;
  /** The rows the export must hold for voucher P, from the performance endpoint. */
  let expectedP: Array<Record<string, unknown>>;

  before(async () => {
    service = await TestService.start();
    fx = await buildFixture(service);
    const perf = await service.get(
      `/v1/analytics/vouchers/${fx.p.id}/performance?start_date=${WINDOW.start}&end_date=${WINDOW.end}&include_details=true`,
    );
    expectedP = perf.body.details.daily;
  });
  after(async () => {
    await service.stop();
  });

  const create = (body: Record<string, unknown>) => service.post('/v1/analytics/export', body);
  const status = (id: string) => service.get(`/v1/analytics/export/${id}`);
  const exportsDir = () => path.join(service.dataDir, 'sandbox', 'exports');

  const runExport = async (format: string) => {
    const res = await create({ voucher_ids: [fx.p.id, fx.q.id], metrics: ALL, format, time_period: WINDOW });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const done = await waitForExport(() => status(res.body.export_id));
    expect(done.status, JSON.stringify(done)).to.equal('completed');
    const download = await fetch(`${service.baseUrl}/v1/analytics/export/${res.body.export_id}/download`, {
      headers: { Authorization: `Bearer ${'sk_test_SandboxKeyForTests0000000000001'}` },
    });
    expect(download.status).to.equal(200);
    return { created: res.body, done, download, bytes: Buffer.from(await download.arrayBuffer()) };
  };

  /** Rows as numbers per voucher and day, in export order. */
  const expectedRows = () => [
    ...expectedP.map((d) => ({ voucher_id: fx.p.id, code: fx.p.code, ...d })),
    ...DAYS.map((date) => ({
      voucher_id: fx.q.id,
      code: fx.q.code,
      date,
      ...Object.fromEntries(ALL.map((m) => [m, 0])),
    })),
  ];

  it('POST answers 202 with the export record; the status record describes the finished file', async () => {
    const { created, done, bytes } = await runExport('csv');
    expect(created).to.deep.include({
      status: 'processing',
      format: 'csv',
      voucher_count: 2,
      metrics: ALL,
      record_count: 14,
      created_at: NOW,
    });
    expect(created.export_id).to.match(/^export_[A-Za-z0-9]{16,}$/);
    expect(created.estimated_completion).to.equal('2026-03-10T12:00:03Z');
    expect(done).to.deep.equal({
      export_id: created.export_id,
      status: 'completed',
      format: 'csv',
      voucher_count: 2,
      metrics: ALL,
      record_count: 14,
      created_at: NOW,
      download_url: `${service.baseUrl}/v1/analytics/export/${created.export_id}/download`,
      expires_at: '2026-03-11T12:00:00Z',
      file_size: bytes.length < 1024 ? `${bytes.length} B` : `${Number((bytes.length / 1024).toFixed(1))} KB`,
      completed_at: NOW,
    });
  });

  it('csv: parsed back, one row per voucher per day, equal to the performance breakdown', async () => {
    const { download, bytes } = await runExport('csv');
    expect(download.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect(download.headers.get('content-disposition')).to.match(/^attachment; filename="export_[A-Za-z0-9]+\.csv"$/);
    expect(download.headers.get('cache-control')).to.equal('private, no-store');
    const rows = parse(bytes, {
      columns: true,
      cast: (value, ctx) =>
        ctx.header || ctx.column === 'voucher_id' || ctx.column === 'code' || ctx.column === 'date'
          ? value
          : Number(value),
    });
    expect(rows).to.deep.equal(expectedRows());
    expect(Object.keys(rows[0] as object)).to.deep.equal(['voucher_id', 'code', 'date', ...ALL]);
  });

  it('json: the rows with the time period and metrics', async () => {
    const { download, bytes, created } = await runExport('json');
    expect(download.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    const body = JSON.parse(bytes.toString('utf8'));
    expect(body).to.deep.equal({
      export_id: created.export_id,
      generated_at: NOW,
      time_period: { start: '2026-03-02T00:00:00Z', end: '2026-03-08T23:59:59Z' },
      metrics: ALL,
      record_count: 14,
      rows: expectedRows(),
    });
  });

  it('xlsx: a real workbook with a header row, date cells and numeric cells', async () => {
    const { download, bytes } = await runExport('xlsx');
    expect(download.headers.get('content-type')).to.equal(
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    );
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(bytes as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Analytics')!;
    expect(sheet.rowCount).to.equal(15);
    expect((sheet.getRow(1).values as unknown[]).slice(1)).to.deep.equal(['voucher_id', 'code', 'date', ...ALL]);
    const rows = [];
    for (let r = 2; r <= 15; r += 1) {
      const cells = (sheet.getRow(r).values as unknown[]).slice(1);
      expect(cells[2]).to.be.instanceOf(Date);
      for (const n of cells.slice(3)) expect(n).to.be.a('number');
      rows.push({
        voucher_id: cells[0],
        code: cells[1],
        date: (cells[2] as Date).toISOString().slice(0, 10),
        ...Object.fromEntries(ALL.map((m, i) => [m, cells[3 + i]])),
      });
    }
    expect(rows).to.deep.equal(expectedRows());
  });

  it('unknown voucher ids: 404 VOUCHER_NOT_FOUND {not_found, found}', async () => {
    const res = await create({
      voucher_ids: [fx.p.id, 'v_Missing000000000000001', fx.p.id, 'nonsense'],
      metrics: ['uses'],
    });
    expect(res.status).to.equal(404);
    expect(res.body.error).to.deep.include({
      code: 'VOUCHER_NOT_FOUND',
      details: { not_found: ['v_Missing000000000000001', 'nonsense'], found: [fx.p.id] },
    });
  });

  it('refuses bad bodies with INVALID_REQUEST, and periods over 90 days with INVALID_TIME_PERIOD', async () => {
    for (const body of [
      { metrics: ['uses'] },
      { voucher_ids: [fx.p.id], metrics: ['clicks'] },
      { voucher_ids: [fx.p.id], metrics: ['uses'], format: 'pdf' },
      { voucher_ids: [fx.p.id], metrics: [] },
    ]) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.code).to.equal('INVALID_REQUEST');
    }
    const long = await create({
      voucher_ids: [fx.p.id],
      metrics: ['uses'],
      time_period: { start: '2026-01-01', end: '2026-04-01' },
    });
    expect(long.status).to.equal(400);
    expect(long.body.error).to.deep.include({
      code: 'INVALID_TIME_PERIOD',
      details: { max_days: 90, requested_days: 91 },
    });
  });

  it('unknown export: 404 EXPORT_NOT_FOUND', async () => {
    const res = await status('export_Nope0000000000000000');
    expect(res.status).to.equal(404);
    expect(res.body.error).to.deep.include({
      code: 'EXPORT_NOT_FOUND',
      details: { export_id: 'export_Nope0000000000000000' },
    });
  });

  it('24 h after completion: status expired, download 410 EXPORT_EXPIRED and the file is gone', async () => {
    const { created } = await runExport('json');
    const file = path.join(exportsDir(), `${created.export_id}.json`);
    expect(fs.existsSync(file)).to.equal(true);
    service.clock.advance(24 * 3600 * 1000 - 1000);
    expect((await status(created.export_id)).body.status).to.equal('completed');
    service.clock.advance(1000);
    expect((await status(created.export_id)).body.status).to.equal('expired');
    const res = await service.get(`/v1/analytics/export/${created.export_id}/download`);
    expect(res.status).to.equal(410);
    expect(res.body.error).to.deep.include({
      code: 'EXPORT_EXPIRED',
      details: { export_id: created.export_id, status: 'expired' },
    });
    expect(fs.existsSync(file)).to.equal(false);
    service.clock.set(NOW);
  });

  it('the sweeper removes expired files without any download', async () => {
    const { created } = await runExport('csv');
    const file = path.join(exportsDir(), `${created.export_id}.csv`);
    await service.sandbox.analytics.waitFor(await service.sandbox.events.headPosition());
    expect(await service.sandbox.exports.sweep()).to.not.include(created.export_id);
    service.clock.advance(24 * 3600 * 1000);
    expect(await service.sandbox.exports.sweep()).to.include(created.export_id);
    expect(fs.existsSync(file)).to.equal(false);
    expect((await status(created.export_id)).body.status).to.equal('expired');
    service.clock.set(NOW);
  });

  describe('the 100,000-row limit', () => {
    let ids: string[];
    before(async () => {
      ids = [fx.p.id];
      const created = await Promise.all(
        Array.from({ length: 16 }, async (_, worker) => {
          const mine: string[] = [];
          for (let i = worker; i < 1_249; i += 16)
            mine.push((await service.createVoucher(fixedVoucher(`BULK${i}`))).id);
          return mine;
        }),
      );
      ids.push(...created.flat());
      expect(ids).to.have.length(1_250);
    });

    it('1,250 vouchers × 81 days = 101,250 rows: 500 EXPORT_FAILED at creation, no export made', async () => {
      const res = await create({
        voucher_ids: ids,
        metrics: ['uses'],
        time_period: { start: '2026-01-01', end: '2026-03-22' },
      });
      expect(res.status).to.equal(500);
      expect(res.body.error).to.deep.include({
        code: 'EXPORT_FAILED',
        details: { reason: 'too_many_records', max_records: 100_000, requested_records: 101_250 },
      });
    });

    it('1,250 vouchers × 80 days = exactly 100,000 rows: accepted and written', async () => {
      const res = await create({
        voucher_ids: ids,
        metrics: ['uses', 'discount'],
        time_period: { start: '2026-01-01', end: '2026-03-21' },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(202);
      const done = await waitForExport(() => status(res.body.export_id));
      expect(done).to.include({ status: 'completed', record_count: 100_000 });
      const lines = fs
        .readFileSync(path.join(exportsDir(), `${res.body.export_id}.csv`), 'utf8')
        .trimEnd()
        .split('\n');
      expect(lines).to.have.length(100_001);
      // voucher P on 2026-03-02 (first voucher, day 61 of the period)
      expect(lines[1 + 60]).to.equal(`${fx.p.id},${fx.p.code},2026-03-02,1,2000`);
    });
  });
});
