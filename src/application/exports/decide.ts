/**
 * The export decider: the events an export's stream `export-<id>` gets from each step, and its
 * state folded from them. Pure: the clock's time and the ids come in as arguments.
 */
import { evolveExport, type ExportView } from '../../projections/exports.ts';
import type {
  ExportCompleted,
  ExportEvent,
  ExportExpired,
  ExportFailed,
  ExportFormat,
  ExportRequested,
} from '../../domain/analytics/events.ts';
import { isoSeconds } from '../../domain/clock.ts';
import { DomainError } from '../../domain/errors.ts';
import type { Metric } from '../analytics/metrics.ts';
import type { DayWindow } from '../analytics/window.ts';

export type { ExportView };

export const MAX_EXPORT_RECORDS = 100_000;
/** A file is kept this long after its export completed. */
export const EXPORT_TTL_MS = 24 * 60 * 60 * 1000;
const EXTENSIONS: Record<ExportFormat, string> = { csv: 'csv', json: 'json', xlsx: 'xlsx' };

export interface ExportRequest {
  voucherIds: string[];
  metrics: Metric[];
  format: ExportFormat;
  window: DayWindow;
}

/** ExportRequested for one row per voucher per day; EXPORT_FAILED (too_many_records) above MAX_EXPORT_RECORDS. */
export const requestExport = (request: ExportRequest, exportId: string, now: Date): ExportRequested => {
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
  return {
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
};

/** The name of the export's file in the exports directory. */
export const exportFileName = (view: ExportView): string => `${view.id}.${EXTENSIONS[view.format]}`;

/** ExportCompleted for the file written; it expires EXPORT_TTL_MS after `now`. */
export const completeExport = (
  view: ExportView,
  file: { fileName: string; fileSize: number; recordCount: number },
  now: Date,
): ExportCompleted => ({
  type: 'ExportCompleted',
  data: {
    exportId: view.id,
    ...file,
    completedAt: isoSeconds(now),
    expiresAt: isoSeconds(new Date(now.getTime() + EXPORT_TTL_MS)),
  },
});

/** Why a job failed: `details.reason` of the export's error. */
export type ExportFailure = 'generation_failed' | 'analytics_behind';

const FAILURE_MESSAGES: Record<ExportFailure, string> = {
  generation_failed: 'The export could not be generated',
  analytics_behind:
    'The analytics had not caught up with the activity before the request in time, so the export would have missed some of it; request it again later',
};

/** ExportFailed: the file could not be generated, or not from up-to-date analytics. */
export const failExport = (view: ExportView, now: Date, reason: ExportFailure = 'generation_failed'): ExportFailed => ({
  type: 'ExportFailed',
  data: {
    exportId: view.id,
    error: { code: 'EXPORT_FAILED', message: FAILURE_MESSAGES[reason], details: { reason } },
    failedAt: isoSeconds(now),
  },
});

/** ExportExpired for an export whose expiry is due and not yet recorded; null when it is recorded. */
export const expireExport = (view: ExportView, now: Date): ExportExpired | null =>
  view.expired_at !== null ? null : { type: 'ExportExpired', data: { exportId: view.id, expiredAt: isoSeconds(now) } };

/** The export its events tell, with `expired` status once a completed export's expires_at has passed; null without events. */
export const exportState = (events: readonly ExportEvent[], now: Date): ExportView | null => {
  const view = events.reduce<ExportView | null>(evolveExport, null);
  if (!view) return null;
  const expired = view.status === 'completed' && view.expires_at !== null && view.expires_at <= isoSeconds(now);
  return expired ? { ...view, status: 'expired' } : view;
};

/** EXPORT_NOT_FOUND for an export id with no stream. */
export const exportNotFound = (exportId: string): DomainError =>
  new DomainError('EXPORT_NOT_FOUND', `Export ${exportId} was not found`, { export_id: exportId });

/** Why the export's file cannot be downloaded (410 EXPORT_EXPIRED, 409 EXPORT_NOT_READY); null when it can. */
export const downloadRefusal = (view: ExportView): DomainError | null => {
  if (view.status === 'expired') {
    return new DomainError('EXPORT_EXPIRED', `Export ${view.id} expired at ${view.expires_at}`, {
      export_id: view.id,
      status: 'expired',
    });
  }
  if (view.status !== 'completed') {
    return new DomainError('EXPORT_NOT_READY', `Export ${view.id} is ${view.status}`, {
      export_id: view.id,
      status: view.status,
    });
  }
  return null;
};
