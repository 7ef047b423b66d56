/**
 * Events outside the voucher aggregate: order-attempt telemetry (for conversion figures) and the
 * export lifecycle. Analytics are rebuilt from the log, so these are events too.
 */

/** One validation of a code: `orderId` when the order carried an id (deduped by the projection). */
export interface OrderAttempt {
  voucherId: string;
  orderId?: string;
  segment?: string;
  /** ISO timestamp (second precision) of the validation. */
  at: string;
}

/**
 * A batch of attempts, appended with expected revision `any` on `telemetry-<UTC day>` by the
 * recorder's flush (one event per flush). Attempts still in memory when the process dies are lost.
 */
export interface OrderAttemptsRecorded {
  type: 'OrderAttemptsRecorded';
  data: { attempts: OrderAttempt[]; recordedAt: string };
}

export const telemetryStream = (day: string): string => `telemetry-${day}`;

export type ExportFormat = 'csv' | 'json' | 'xlsx';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['csv', 'json', 'xlsx'];
export const EXPORT_METRICS = [
  'uses',
  'discount',
  'orders',
  'conversion_rate',
  'avg_order_value',
  'revenue_impact',
  'unique_customers',
] as const;
export type ExportMetric = (typeof EXPORT_METRICS)[number];

export interface ExportRequested {
  type: 'ExportRequested';
  data: {
    exportId: string;
    voucherIds: string[];
    metrics: ExportMetric[];
    format: ExportFormat;
    /** First and last UTC day of the rows, inclusive. */
    startDay: string;
    endDay: string;
    recordCount: number;
    requestedAt: string;
    estimatedCompletion: string;
  };
}

export interface ExportCompleted {
  type: 'ExportCompleted';
  data: {
    exportId: string;
    fileName: string;
    fileSize: number;
    recordCount: number;
    completedAt: string;
    expiresAt: string;
  };
}

export interface ExportFailed {
  type: 'ExportFailed';
  data: {
    exportId: string;
    error: { code: string; message: string; details: Record<string, unknown> };
    failedAt: string;
  };
}

/** The file was removed (24 h after completion). */
export interface ExportExpired {
  type: 'ExportExpired';
  data: { exportId: string; expiredAt: string };
}

export type ExportEvent = ExportRequested | ExportCompleted | ExportFailed | ExportExpired;
export const exportStream = (exportId: string): string => `export-${exportId}`;
