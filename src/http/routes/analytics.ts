import type { Request } from 'express';
import { customerInsights, DEFAULT_TREND_METRICS, performance, trends } from '../../application/analytics/queries.ts';
import { METRICS, type Metric } from '../../application/analytics/metrics.ts';
import { parseWindow, type Interval } from '../../application/analytics/window.ts';
import { renderExport } from '../exports.ts';
import type { VoucherDoc } from '../../projections/voucherDetails.ts';
import { EXPORT_FORMATS, type ExportFormat } from '../../domain/analytics/events.ts';
import { DomainError, invalidRequest } from '../../domain/errors.ts';
import { connectionBaseUrl } from '../addresses.ts';
import type { Guard } from '../auth.ts';
import type { Routes } from './mount.ts';
import { compileBody } from '../validation.ts';

export const exportSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['voucher_ids', 'metrics'],
  properties: {
    voucher_ids: {
      type: 'array',
      minItems: 1,
      maxItems: 5_000,
      items: { type: 'string', minLength: 1, maxLength: 100 },
    },
    metrics: {
      type: 'array',
      minItems: 1,
      maxItems: METRICS.length,
      uniqueItems: true,
      items: { type: 'string', enum: [...METRICS] },
    },
    format: { type: 'string', enum: [...EXPORT_FORMATS] },
    time_period: {
      type: 'object',
      additionalProperties: false,
      properties: { start: { type: 'string', maxLength: 40 }, end: { type: 'string', maxLength: 40 } },
    },
  },
};
const parseExport = compileBody<{
  voucher_ids: string[];
  metrics: Metric[];
  format?: ExportFormat;
  time_period?: { start?: string; end?: string };
}>(exportSchema);

/** Query parameters of the analytics reads (documented in the OpenAPI document). */
export const ANALYTICS_QUERY = {
  performance: ['start_date', 'end_date', 'include_details'],
  trends: ['start_date', 'end_date', 'interval', 'metrics'],
  customers: ['start_date', 'end_date', 'limit'],
} as const;

/** Only the endpoint's parameters, each once (except `metrics`, which may repeat). */
const query = (req: Request, allowed: readonly string[]): Record<string, string | string[] | undefined> => {
  const q = req.query as Record<string, unknown>;
  const problems = Object.keys(q)
    .filter((k) => !allowed.includes(k))
    .map((field) => ({ field, message: 'is not allowed' }));
  for (const [field, value] of Object.entries(q)) {
    if (field !== 'metrics' && typeof value !== 'string' && allowed.includes(field))
      problems.push({ field, message: 'must be given once' });
  }
  if (problems.length > 0) throw invalidRequest(problems);
  return q as Record<string, string | string[] | undefined>;
};

const windowOf = (req: Request, q: Record<string, string | string[] | undefined>) =>
  parseWindow(req.ctx.clock.now(), q.start_date as string | undefined, q.end_date as string | undefined);

const booleanParam = (value: string | undefined, field: string): boolean => {
  if (value === undefined || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw invalidRequest([{ field, message: 'must be true or false' }]);
};

/** `metrics=uses&metrics=discount` or `metrics=uses,discount`; unknown names: 400. */
const metricsParam = (value: string | string[] | undefined): Metric[] => {
  if (value === undefined) return [...DEFAULT_TREND_METRICS];
  const names = [
    ...new Set(
      (Array.isArray(value) ? value : [value])
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = names.filter((n) => !(METRICS as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw invalidRequest([
      {
        field: 'metrics',
        message: `must name metrics among ${METRICS.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`,
      },
    ]);
  }
  return names as Metric[];
};

const limitParam = (value: string | undefined): number => {
  if (value === undefined) return 10;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 100)
    throw invalidRequest([{ field: 'limit', message: 'must be an integer from 1 to 100' }]);
  return n;
};

/**
 * Analytics reads and exports: scope analytics:read; groups performance / trends / customers / export / other.
 * `rootUrl` gives the root absolute links start with (`download_url`): the configured public base
 * URL or the listen address (default: the address the connection reached), never the request's `Host`.
 */
export const analyticsRoutes = (
  routes: Routes,
  guard: Guard,
  rootUrl: (req: Request) => string = connectionBaseUrl,
): void => {
  routes.get('/analytics/vouchers/:voucherId/performance', guard('analytics:read', 'performance'), async (req, res) => {
    const q = query(req, ANALYTICS_QUERY.performance);
    const window = windowOf(req, q);
    res.json(
      await performance(
        req.ctx,
        String(req.params.voucherId),
        window,
        booleanParam(q.include_details as string | undefined, 'include_details'),
      ),
    );
  });

  routes.get('/analytics/vouchers/:voucherId/trends', guard('analytics:read', 'trends'), async (req, res) => {
    const q = query(req, ANALYTICS_QUERY.trends);
    const interval = (q.interval ?? 'day') as string;
    if (!['day', 'week', 'month'].includes(interval))
      throw invalidRequest([{ field: 'interval', message: 'must be one of day, week, month' }]);
    const window = windowOf(req, q);
    res.json(
      await trends(req.ctx, String(req.params.voucherId), window, interval as Interval, metricsParam(q.metrics)),
    );
  });

  routes.get('/analytics/vouchers/:voucherId/customers', guard('analytics:read', 'customers'), async (req, res) => {
    const q = query(req, ANALYTICS_QUERY.customers);
    const limit = limitParam(q.limit as string | undefined);
    res.json(await customerInsights(req.ctx, String(req.params.voucherId), windowOf(req, q), limit));
  });

  routes.post('/analytics/export', guard('analytics:read', 'export'), async (req, res) => {
    const body = parseExport(req.body);
    const window = parseWindow(req.ctx.clock.now(), body.time_period?.start, body.time_period?.end, {
      start: 'time_period.start',
      end: 'time_period.end',
    });
    const ids = [...new Set(body.voucher_ids)];
    const vouchers = await req.ctx.reads.getMany<VoucherDoc>('vouchers', ids);
    const notFound = ids.filter((id) => !vouchers.has(id));
    if (notFound.length > 0) {
      throw new DomainError('VOUCHER_NOT_FOUND', `${notFound.length} of the vouchers were not found`, {
        not_found: notFound,
        found: ids.filter((id) => vouchers.has(id)),
      });
    }
    const view = await req.ctx.exports.create(
      { voucherIds: ids, metrics: body.metrics, format: body.format ?? 'csv', window },
      req.apiKey.id,
    );
    res
      .status(202)
      .location(`/v1/analytics/export/${view.id}`)
      .json({
        export_id: view.id,
        status: view.status,
        estimated_completion: view.estimated_completion,
        format: view.format,
        voucher_count: view.voucher_ids.length,
        metrics: view.metrics,
        record_count: view.record_count,
        time_period: { start: `${view.start_day}T00:00:00Z`, end: `${view.end_day}T23:59:59Z` },
        created_at: view.requested_at,
      });
  });

  routes.get('/analytics/export/:exportId', guard('analytics:read', 'other'), async (req, res) => {
    query(req, []);
    const { view } = await req.ctx.exports.get(String(req.params.exportId));
    res.json(renderExport(view, `${rootUrl(req)}/v1`));
  });

  routes.get('/analytics/export/:exportId/download', guard('analytics:read', 'other'), async (req, res) => {
    query(req, []);
    const { file, contentType, fileName } = await req.ctx.exports.download(String(req.params.exportId));
    res.setHeader('Content-Type', contentType);
    res.setHeader('Content-Disposition', `attachment; filename="${fileName}"`);
    // Analytics files are the account's data: never stored by a shared cache.
    const headers = { 'Content-Type': contentType, 'Cache-Control': 'private, no-store' };
    await new Promise<void>((resolve, reject) =>
      res.sendFile(file, { headers, cacheControl: false, lastModified: false }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  });
};
