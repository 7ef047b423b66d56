/**
 * An export survives a crash: the real service is killed (SIGKILL) while its export job has not
 * finished; started again on the same DATA_DIR, it resumes the job and the file arrives.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import { percentageVoucher } from '../fixtures/vouchers.ts';
import { waitForExport } from '../support/analyticsFixture.ts';
import { exitWithin, killAll, startService, type RunningService } from '../support/processes.ts';

const KEY = 'sk_test_ExportResume0Sandbox0Key0000001';

describe('exports survive a crash (real process, SIGKILL)', function () {
  this.timeout(120_000);
  let dataDir: string;
  after(async () => {
    await killAll();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const call = async (service: RunningService, method: string, urlPath: string, body?: unknown) => {
    const res = await fetch(`${service.base}${urlPath}`, {
      method,
      headers: {
        Authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* a file */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };

  it('a processing export is resumed on the next start and completes', async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-export-resume-'));
    // Its export jobs never start: the kill lands while the export is still processing.
    const first = await startService({ DATA_DIR: dataDir, VOUCHER_API_KEYS: KEY }, 'test/http/exportResume.main.ts');
    const voucher = (await call(first, 'POST', '/v1/vouchers', percentageVoucher('RESUME10'))).body;
    const applied: Array<{ applied_at: string; discount_amount: number }> = [];
    for (const [orderId, value] of [
      ['r1', 10_000],
      ['r2', 5_000],
    ] as const) {
      const res = await call(first, 'POST', '/v1/vouchers/apply', {
        code: 'RESUME10',
        order_id: orderId,
        order: { value },
        customer: { id: `cus_${orderId}` },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      applied.push(res.body);
    }
    const created = await call(first, 'POST', '/v1/analytics/export', {
      voucher_ids: [voucher.id],
      metrics: ['uses', 'discount', 'unique_customers'],
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(202);
    const id = created.body.export_id as string;
    expect(created.body.status).to.equal('processing');
    const early = await call(first, 'GET', `/v1/analytics/export/${id}/download`);
    expect(early.status).to.equal(409);
    expect(early.body.error).to.deep.include({
      code: 'EXPORT_NOT_READY',
      details: { export_id: id, status: 'processing' },
    });

    first.proc.child.kill('SIGKILL');
    await exitWithin(first.proc, 10_000);
    expect(fs.existsSync(path.join(dataDir, 'sandbox', 'exports', `${id}.csv`))).to.equal(false);

    const second = await startService({ DATA_DIR: dataDir, VOUCHER_API_KEYS: KEY });
    const done = await waitForExport(() => call(second, 'GET', `/v1/analytics/export/${id}`));
    expect(done).to.include({ export_id: id, status: 'completed', record_count: 30 });
    const file = await call(second, 'GET', `/v1/analytics/export/${id}/download`);
    expect(file.status).to.equal(200);
    const rows = parse(file.body as string, { columns: true }) as Array<Record<string, string>>;
    expect(rows).to.have.length(30);
    const byDay = new Map<string, { uses: number; discount: number; customers: number }>();
    for (const a of applied) {
      const day = a.applied_at.slice(0, 10);
      const entry = byDay.get(day) ?? { uses: 0, discount: 0, customers: 0 };
      byDay.set(day, {
        uses: entry.uses + 1,
        discount: entry.discount + a.discount_amount,
        customers: entry.customers + 1,
      });
    }
    for (const row of rows) {
      const want = byDay.get(row.date!) ?? { uses: 0, discount: 0, customers: 0 };
      expect(row, row.date).to.deep.equal({
        voucher_id: voucher.id,
        code: 'RESUME10',
        date: row.date,
        uses: String(want.uses),
        discount: String(want.discount),
        unique_customers: String(want.customers),
      });
    }
    expect(rows.reduce((n, r) => n + Number(r.discount), 0)).to.equal(1_000 + 500);
    expect(fs.readdirSync(path.join(dataDir, 'sandbox', 'exports')).filter((f) => f.endsWith('.tmp'))).to.deep.equal(
      [],
    );
    second.proc.child.kill('SIGTERM');
    await exitWithin(second.proc, 15_000);
  });
});
