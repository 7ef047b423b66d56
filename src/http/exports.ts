import type { ExportView } from '../application/exports/decide.ts';

/** Bytes as a reader would say them: "812 B", "2.5 KB", "2.5 MB" (1 KB = 1024 B). */
export const readableSize = (bytes: number): string => {
  const units = ['B', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${Number(value.toFixed(1))} ${units[unit]}`;
};

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
