import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'csv-stringify/sync';
import type { ExportFormat } from '../../domain/analytics/events.ts';
import type { Metric } from '../analytics/metrics.ts';
import type * as ExcelJS from 'exceljs';
import { lazyPackage } from '../../core/lazyPackage.ts';

const exceljs = lazyPackage<typeof ExcelJS>('exceljs');

/** One export row: a voucher on a day, with the requested metrics. */
export interface ExportRow {
  voucher_id: string;
  code: string;
  date: string;
  metrics: Partial<Record<Metric, number>>;
}

export interface ExportFileMeta {
  exportId: string;
  generatedAt: string;
  startDay: string;
  endDay: string;
  metrics: readonly Metric[];
}

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

const columns = (meta: ExportFileMeta): string[] => ['voucher_id', 'code', 'date', ...meta.metrics];

const writeCsv = (file: string, rows: ExportRow[], meta: ExportFileMeta): void => {
  const records = rows.map((r) => [r.voucher_id, r.code, r.date, ...meta.metrics.map((m) => r.metrics[m])]);
  fs.writeFileSync(file, stringify(records, { header: true, columns: columns(meta) }));
};

const writeJson = (file: string, rows: ExportRow[], meta: ExportFileMeta): void => {
  fs.writeFileSync(
    file,
    JSON.stringify({
      export_id: meta.exportId,
      generated_at: meta.generatedAt,
      time_period: { start: `${meta.startDay}T00:00:00Z`, end: `${meta.endDay}T23:59:59Z` },
      metrics: meta.metrics,
      record_count: rows.length,
      rows: rows.map((r) => ({ voucher_id: r.voucher_id, code: r.code, date: r.date, ...r.metrics })),
    }),
  );
};

const NUMBER_FORMATS: Partial<Record<Metric, string>> = { conversion_rate: '0.00%' };

/** A real workbook, written as a stream: sheet "Analytics", a bold frozen header row, date cells, numeric cells. */
const writeXlsx = async (file: string, rows: ExportRow[], meta: ExportFileMeta): Promise<void> => {
  const workbook = new (exceljs().stream.xlsx.WorkbookWriter)({
    filename: file,
    useStyles: true,
    useSharedStrings: false,
  });
  workbook.created = new Date(meta.generatedAt);
  const sheet = workbook.addWorksheet('Analytics', { views: [{ state: 'frozen', ySplit: 1 }] });
  sheet.columns = columns(meta).map((key) => ({
    header: key,
    key,
    width: key === 'voucher_id' ? 26 : 16,
    style:
      key === 'date'
        ? { numFmt: 'yyyy-mm-dd' }
        : NUMBER_FORMATS[key as Metric]
          ? { numFmt: NUMBER_FORMATS[key as Metric] }
          : {},
  }));
  sheet.getRow(1).font = { bold: true };
  sheet.getRow(1).commit();
  for (const r of rows) {
    sheet
      .addRow({ voucher_id: r.voucher_id, code: r.code, date: new Date(`${r.date}T00:00:00Z`), ...r.metrics })
      .commit();
  }
  sheet.commit();
  await workbook.commit();
};

/** Writes the file of the format at `file`. */
const writeFormat = async (
  format: ExportFormat,
  file: string,
  rows: ExportRow[],
  meta: ExportFileMeta,
): Promise<void> => {
  if (format === 'csv') writeCsv(file, rows, meta);
  else if (format === 'json') writeJson(file, rows, meta);
  else await writeXlsx(file, rows, meta);
};

/**
 * The export files of one environment, in one directory. A file is written under a temporary
 * name (`<name>.tmp`) and renamed, so a file that exists under its own name is complete.
 */
export class ExportFiles {
  constructor(readonly dir: string) {}

  /** Creates the directory and removes temporary files a stopped process left. */
  prepare(): void {
    fs.mkdirSync(this.dir, { recursive: true });
    for (const f of fs.readdirSync(this.dir)) if (f.endsWith('.tmp')) fs.rmSync(this.pathOf(f), { force: true });
  }

  pathOf(fileName: string): string {
    return path.join(this.dir, fileName);
  }

  /**
   * Writes `fileName` in `format` and returns its size in bytes; null when `abandon()` says so
   * once the data is written (the temporary file is removed, nothing is renamed).
   */
  async write(
    fileName: string,
    format: ExportFormat,
    rows: ExportRow[],
    meta: ExportFileMeta,
    abandon: () => boolean,
  ): Promise<number | null> {
    const tmp = this.pathOf(`${fileName}.tmp`);
    fs.mkdirSync(this.dir, { recursive: true });
    await writeFormat(format, tmp, rows, meta);
    if (abandon()) {
      fs.rmSync(tmp, { force: true });
      return null;
    }
    fs.renameSync(tmp, this.pathOf(fileName));
    return fs.statSync(this.pathOf(fileName)).size;
  }

  remove(fileName: string): void {
    fs.rmSync(this.pathOf(fileName), { force: true });
  }
}
