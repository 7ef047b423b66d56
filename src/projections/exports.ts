import type { ExportEvent, ExportFormat, ExportMetric } from '../domain/analytics/events.ts';
import type { Projection } from '../core/projection.ts';

export type ExportStatus = 'processing' | 'completed' | 'failed' | 'expired';

/** An export as its stream `export-<id>` tells it. */
export interface ExportView {
  id: string;
  status: ExportStatus;
  format: ExportFormat;
  voucher_ids: string[];
  metrics: ExportMetric[];
  start_day: string;
  end_day: string;
  record_count: number;
  requested_at: string;
  estimated_completion: string;
  file_name: string | null;
  file_size: number | null;
  completed_at: string | null;
  expires_at: string | null;
  expired_at: string | null;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
  [key: string]: unknown;
}

/** Pure fold of one export's events; shared by the projection and the status endpoint (which reads the stream). */
export const evolveExport = (view: ExportView | null, event: ExportEvent): ExportView | null => {
  switch (event.type) {
    case 'ExportRequested': {
      const d = event.data;
      return {
        id: d.exportId,
        status: 'processing',
        format: d.format,
        voucher_ids: d.voucherIds,
        metrics: d.metrics,
        start_day: d.startDay,
        end_day: d.endDay,
        record_count: d.recordCount,
        requested_at: d.requestedAt,
        estimated_completion: d.estimatedCompletion,
        file_name: null,
        file_size: null,
        completed_at: null,
        expires_at: null,
        expired_at: null,
        error: null,
      };
    }
    case 'ExportCompleted': {
      const d = event.data;
      return (
        view && {
          ...view,
          status: 'completed',
          file_name: d.fileName,
          file_size: d.fileSize,
          record_count: d.recordCount,
          completed_at: d.completedAt,
          expires_at: d.expiresAt,
        }
      );
    }
    case 'ExportFailed':
      return view && { ...view, status: 'failed', error: event.data.error };
    case 'ExportExpired':
      return view && { ...view, status: 'expired', expired_at: event.data.expiredAt };
    default:
      return view;
  }
};

/** Exports by status: which to resume on start (processing), which files to sweep (completed, by expires_at). */
export const exportsProjection: Projection<ExportEvent, ExportView> = {
  name: 'exports',
  collection: 'exports',
  handles: ['ExportRequested', 'ExportCompleted', 'ExportFailed', 'ExportExpired'],
  documentId: (event) => event.data.exportId,
  evolve: evolveExport,
  indexes: [['status', 'expires_at']],
};
