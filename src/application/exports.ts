import type { EnvironmentEvent } from './events.ts';
import fs from 'node:fs';
import path from 'node:path';
import { evolveExport, type ExportView } from '../projections/exports.ts';
import { zeroTotals, type DailyDoc } from '../projections/analyticsDocs.ts';
import type { VoucherDoc } from '../projections/voucherDetails.ts';
import { exportStream, type ExportEvent, type ExportFormat } from '../domain/analytics/events.ts';
import { isoSeconds, type Clock } from '../domain/clock.ts';
import { DomainError } from '../domain/errors.ts';
import { WrongExpectedRevisionError, type EventStore } from '../core/eventStore.ts';
import type { ProjectorHandle } from '../core/projectionRunner.ts';
import type { ReadStore } from '../core/readStore.ts';
import { metricsOf, pick, type Metric } from './analytics/reads.ts';
import { dayNumber, daysOf, type DayWindow } from './analytics/window.ts';
import { CONTENT_TYPES, readableSize, writeExportFile, type ExportRow } from './exportFiles.ts';
import { randomBase62 } from './ids.ts';

export const MAX_EXPORT_RECORDS = 100_000;
export const EXPORT_TTL_MS = 24 * 60 * 60 * 1000;
const SWEEP_INTERVAL_MS = 60_000;
const EXTENSIONS: Record<ExportFormat, string> = { csv: 'csv', json: 'json', xlsx: 'xlsx' };

export interface ExportRequest {
  voucherIds: string[];
  metrics: Metric[];
  format: ExportFormat;
  window: DayWindow;
}

export interface ExportJobsDeps {
  events: EventStore<EnvironmentEvent>;
  /** The core read models (vouchers). */
  reads: ReadStore;
  /** The analytics group's read models (export records, daily aggregates). */
  analyticsReads: ReadStore;
  clock: Clock;
  analytics: ProjectorHandle;
  /** DATA_DIR/<env>/exports */
  dir: string;
  logger?: { error(obj: object, msg: string): void };
  /** Pause before each job starts (tests of the resume path only; default 0). */
  startDelayMs?: number;
}

/**
 * Export jobs. The record lives on the stream `export-<id>` (ExportRequested, then ExportCompleted
 * or ExportFailed, then ExportExpired), so it survives restarts; files live in `dir`. Jobs run one
 * at a time in the background; on start, exports still `processing` (the process died during
 * one) are run again. A file is written under a temporary name and renamed, so a file that exists
 * is complete. Files expire 24 h after completion (clock time); the sweeper removes them.
 */
export class ExportJobs {
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;
  private wake?: () => void;
  private sweeper?: NodeJS.Timeout;

  constructor(private readonly deps: ExportJobsDeps) {}

  /** Resumes unfinished exports and starts the sweeper; call once the analytics runner runs. */
  async start(): Promise<void> {
    fs.mkdirSync(this.deps.dir, { recursive: true });
    for (const f of fs.readdirSync(this.deps.dir))
      if (f.endsWith('.tmp')) fs.rmSync(path.join(this.deps.dir, f), { force: true });
    this.sweeper = setInterval(() => {
      void this.sweep().catch((err: unknown) => this.deps.logger?.error({ err }, 'export sweep failed'));
    }, SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    void this.resume().catch((err: unknown) => this.deps.logger?.error({ err }, 'resuming exports failed'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    this.wake?.();
    await this.queue;
  }

  /** Exports still processing after a restart are run again (the read model first catches up with the log). */
  async resume(): Promise<string[]> {
    await this.deps.analytics.waitFor(await this.deps.events.headPosition(), 60_000);
    const pending = await this.deps.analyticsReads.find<ExportView>(
      'exports',
      { status: 'processing' },
      { sort: [['requested_at', 1]] },
    );
    for (const view of pending) this.enqueue(view.id);
    return pending.map((v) => v.id);
  }

  async create(request: ExportRequest): Promise<ExportView> {
    const now = this.deps.clock.now();
    const recordCount = request.voucherIds.length * request.window.days;
    if (recordCount > MAX_EXPORT_RECORDS) {
      throw new DomainError(
        'EXPORT_FAILED',
        `The export would hold ${recordCount} rows; at most ${MAX_EXPORT_RECORDS} are allowed`,
        {
          reason: 'too_many_records',
          max_records: MAX_EXPORT_RECORDS,
          requested_records: recordCount,
        },
      );
    }
    const exportId = `export_${randomBase62(20)}`;
    const event: ExportEvent = {
      type: 'ExportRequested',
      data: {
        exportId,
        voucherIds: request.voucherIds,
        metrics: request.metrics,
        format: request.format,
        startDay: request.window.startDay,
        endDay: request.window.endDay,
        recordCount,
        requestedAt: isoSeconds(now),
        estimatedCompletion: isoSeconds(new Date(now.getTime() + 1_000 * (2 + Math.ceil(recordCount / 20_000)))),
      },
    };
    await this.deps.events.appendToStream(exportStream(exportId), [event], {
      expectedRevision: 'no_stream',
    });
    this.enqueue(exportId);
    return evolveExport(null, event)!;
  }

  /** The export as its stream tells it, with expiry by the clock; EXPORT_NOT_FOUND when unknown. */
  async get(exportId: string): Promise<{ view: ExportView; revision: number }> {
    const events = /^export_[A-Za-z0-9]{1,64}$/.test(exportId)
      ? await this.deps.events.readStream<ExportEvent>(exportStream(exportId))
      : [];
    const view = events.reduce<ExportView | null>(evolveExport, null);
    if (!view) throw new DomainError('EXPORT_NOT_FOUND', `Export ${exportId} was not found`, { export_id: exportId });
    const expired =
      view.status === 'completed' && view.expires_at !== null && view.expires_at <= isoSeconds(this.deps.clock.now());
    return { view: expired ? { ...view, status: 'expired' } : view, revision: events.at(-1)!.revision };
  }

  /** The file to send, or 409 EXPORT_NOT_READY / 410 EXPORT_EXPIRED (an expired file is removed first). */
  async download(exportId: string): Promise<{ file: string; contentType: string; fileName: string }> {
    const { view, revision } = await this.get(exportId);
    if (view.status === 'expired') {
      await this.expire(view, revision);
      throw new DomainError('EXPORT_EXPIRED', `Export ${exportId} expired at ${view.expires_at}`, {
        export_id: exportId,
        status: 'expired',
      });
    }
    if (view.status !== 'completed') {
      throw new DomainError('EXPORT_NOT_READY', `Export ${exportId} is ${view.status}`, {
        export_id: exportId,
        status: view.status,
      });
    }
    return {
      file: path.join(this.deps.dir, view.file_name!),
      contentType: CONTENT_TYPES[view.format],
      fileName: view.file_name!,
    };
  }

  /** Removes the files of completed exports past expires_at and records their expiry; returns their ids. */
  async sweep(): Promise<string[]> {
    const now = isoSeconds(this.deps.clock.now());
    const due = await this.deps.analyticsReads.find<ExportView>('exports', {
      status: 'completed',
      expires_at: { $lte: now },
    });
    for (const view of due) {
      const { view: current, revision } = await this.get(view.id);
      if (current.status === 'expired') await this.expire(current, revision);
    }
    return due.map((v) => v.id);
  }

  private async expire(view: ExportView, revision: number): Promise<void> {
    if (view.file_name) fs.rmSync(path.join(this.deps.dir, view.file_name), { force: true });
    if (view.expired_at !== null) return;
    await this.append(view.id, revision, {
      type: 'ExportExpired',
      data: { exportId: view.id, expiredAt: isoSeconds(this.deps.clock.now()) },
    });
  }

  private enqueue(exportId: string): void {
    this.queue = this.queue
      .then(() => this.run(exportId))
      .catch((err: unknown) => this.deps.logger?.error({ err, export_id: exportId }, 'export job failed'));
  }

  private async delay(): Promise<void> {
    const ms = this.deps.startDelayMs ?? 0;
    if (ms <= 0 || this.stopped) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async run(exportId: string): Promise<void> {
    await this.delay();
    if (this.stopped) return;
    const { view, revision } = await this.get(exportId);
    if (view.status !== 'processing') return;
    const requested = (await this.deps.events.readStream(exportStream(exportId), { maxCount: 1 }))[0]!;
    // The rows include every application and attempt logged before the request.
    await this.deps.analytics.waitFor(requested.position, 60_000);
    try {
      const rows = await this.rows(view);
      const fileName = `${exportId}.${EXTENSIONS[view.format]}`;
      const tmp = path.join(this.deps.dir, `${fileName}.tmp`);
      fs.mkdirSync(this.deps.dir, { recursive: true });
      await writeExportFile(view.format, tmp, rows, {
        exportId,
        generatedAt: isoSeconds(this.deps.clock.now()),
        startDay: view.start_day,
        endDay: view.end_day,
        metrics: view.metrics,
      });
      if (this.stopped) {
        fs.rmSync(tmp, { force: true });
        return;
      } // resumed on the next start
      fs.renameSync(tmp, path.join(this.deps.dir, fileName));
      const completed = this.deps.clock.now();
      await this.append(exportId, revision, {
        type: 'ExportCompleted',
        data: {
          exportId,
          fileName,
          fileSize: fs.statSync(path.join(this.deps.dir, fileName)).size,
          recordCount: rows.length,
          completedAt: isoSeconds(completed),
          expiresAt: isoSeconds(new Date(completed.getTime() + EXPORT_TTL_MS)),
        },
      });
    } catch (error) {
      this.deps.logger?.error({ err: error, export_id: exportId }, 'export generation failed');
      await this.append(exportId, revision, {
        type: 'ExportFailed',
        data: {
          exportId,
          error: {
            code: 'EXPORT_FAILED',
            message: 'The export could not be generated',
            details: { reason: 'generation_failed' },
          },
          failedAt: isoSeconds(this.deps.clock.now()),
        },
      });
    }
  }

  /** One row per voucher per day (zero-filled), from the daily analytics documents. */
  private async rows(view: ExportView): Promise<ExportRow[]> {
    const days = daysOf({
      startDay: view.start_day,
      endDay: view.end_day,
      days: dayNumber(view.end_day) - dayNumber(view.start_day) + 1,
    });
    const vouchers = await this.deps.reads.getMany<VoucherDoc>('vouchers', view.voucher_ids);
    const rows: ExportRow[] = [];
    for (const voucherId of view.voucher_ids) {
      const docs = await this.deps.analyticsReads.find<DailyDoc>('analytics_daily', {
        voucher_id: voucherId,
        date: { $gte: view.start_day, $lte: view.end_day },
      });
      const byDay = new Map(docs.map((d) => [d.date, d]));
      const code = vouchers.get(voucherId)?.code ?? '';
      for (const date of days) {
        const doc = byDay.get(date);
        rows.push({
          voucher_id: voucherId,
          code,
          date,
          metrics: pick(metricsOf(doc ?? zeroTotals(), doc?.unique_customers ?? 0), view.metrics),
        });
      }
    }
    return rows;
  }

  /** Appends to the export's stream at `revision`; a concurrent writer got there first: nothing to do. */
  private async append(exportId: string, revision: number, event: ExportEvent): Promise<void> {
    try {
      await this.deps.events.appendToStream(exportStream(exportId), [event], {
        expectedRevision: revision,
      });
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
  }
}

/** The status record of `GET /analytics/export/{id}`; `baseUrl` is `{scheme}://{host}/v1`. */
export const renderExport = (view: ExportView, baseUrl: string): Record<string, unknown> => ({
  export_id: view.id,
  status: view.status,
  format: view.format,
  voucher_count: view.voucher_ids.length,
  metrics: view.metrics,
  record_count: view.record_count,
  created_at: view.requested_at,
  ...(view.status === 'processing' ? { estimated_completion: view.estimated_completion } : {}),
  ...(view.completed_at !== null
    ? {
        download_url: `${baseUrl}/analytics/export/${view.id}/download`,
        expires_at: view.expires_at,
        file_size: readableSize(view.file_size ?? 0),
        completed_at: view.completed_at,
      }
    : {}),
  ...(view.status === 'failed' ? { error: view.error } : {}),
});
