/** The analytics and export operations of the OpenAPI document (merged by openapi.ts). */
import { METRICS } from '../application/analytics/metrics.ts';
import { EXPORT_FORMATS } from '../domain/analytics/events.ts';
import { exportSchema } from './routes/analytics.ts';

interface Helpers {
  error(description: string, codes: string[]): object;
  json(description: string, schema: object, headers?: object): object;
  body(schema: object): object;
  ref(name: string): object;
  idParam(name: string, prefix: string): object;
  common: Record<string | number, object>;
  /** 413 and 415: what an operation with a JSON body can also answer. */
  bodyErrors: Record<string | number, object>;
  /** 429 of an operation with per-key quotas: RATE_LIMIT_EXCEEDED or QUOTA_EXCEEDED naming the quota. */
  tooManyOrQuota(quotas: string[]): object;
}

const q = (name: string, schema: object, description: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  description,
});
const dateParam = (name: string, description: string) =>
  q(
    name,
    { type: 'string' },
    `${description} A date (YYYY-MM-DD) or an ISO 8601 timestamp; a timestamp selects its UTC day.`,
  );
const windowParams = [
  dateParam('start_date', 'First day of the window (default: 29 days before end_date).'),
  dateParam('end_date', 'Last day of the window, included (default: today, UTC).'),
];
const periodError = 'Invalid query, or a window over 90 days (INVALID_TIME_PERIOD {max_days, requested_days}).';

export const analyticsPaths = (h: Helpers) => {
  const notFound = h.error('Unknown voucher: details {not_found, found}.', ['VOUCHER_NOT_FOUND']);
  const read = (operationId: string, summary: string, group: string, params: object[], schema: string) => ({
    get: {
      summary,
      operationId,
      'x-rate-limit-group': group,
      'x-scope': 'analytics:read',
      parameters: [h.idParam('voucher_id', 'v_'), ...windowParams, ...params],
      responses: {
        200: h.json('The report.', h.ref(schema)),
        400: h.error(periodError, ['INVALID_REQUEST', 'INVALID_TIME_PERIOD']),
        404: notFound,
        ...h.common,
      },
    },
  });
  const exportNotFound = h.error('Unknown export.', ['EXPORT_NOT_FOUND']);
  const noQuery = h.error('A query parameter was sent (this operation takes none).', ['INVALID_REQUEST']);
  return {
    '/analytics/vouchers/{voucher_id}/performance': read(
      'getVoucherPerformance',
      'Performance of a voucher over a window',
      'performance',
      [
        q(
          'include_details',
          { type: 'boolean', default: false },
          'Adds details.daily (every day, zero-filled) and details.segments.',
        ),
      ],
      'Performance',
    ),
    '/analytics/vouchers/{voucher_id}/trends': read(
      'getVoucherTrends',
      'Usage trends in day, week (Monday) or month buckets',
      'trends',
      [
        q(
          'interval',
          { type: 'string', enum: ['day', 'week', 'month'], default: 'day' },
          'Bucket size; weeks start on Monday, months on the 1st.',
        ),
        {
          ...q(
            'metrics',
            { type: 'array', items: { type: 'string', enum: [...METRICS] } },
            'Repeated or comma-separated; default uses, discount, orders, conversion_rate, avg_order_value.',
          ),
          style: 'form',
          explode: true,
        },
      ],
      'Trends',
    ),
    '/analytics/vouchers/{voucher_id}/customers': read(
      'getVoucherCustomers',
      'Customer insights of a voucher',
      'customers',
      [
        q(
          'limit',
          { type: 'integer', minimum: 1, maximum: 100, default: 10 },
          'Length of the segment and region lists.',
        ),
      ],
      'CustomerInsights',
    ),
    '/analytics/export': {
      post: {
        summary: 'Create an export (runs in the background)',
        operationId: 'createExport',
        'x-rate-limit-group': 'export',
        'x-scope': 'analytics:read',
        requestBody: h.body(exportSchema),
        responses: {
          202: h.json('The export record (status processing); Location names the status.', h.ref('ExportRecord'), {
            Location: { schema: { type: 'string' } },
          }),
          400: h.error(periodError, ['INVALID_REQUEST', 'INVALID_TIME_PERIOD']),
          404: notFound,
          ...h.bodyErrors,
          ...h.common,
          429: h.tooManyOrQuota(['pending_exports', 'export_files']),
          500: h.error(
            'More than 100,000 rows (vouchers × days): details {reason, max_records, requested_records}; or an unexpected failure (INTERNAL_ERROR, details {request_id}).',
            ['EXPORT_FAILED', 'INTERNAL_ERROR'],
          ),
        },
      },
    },
    '/analytics/export/{export_id}': {
      get: {
        summary: 'Status of an export',
        operationId: 'getExport',
        'x-rate-limit-group': 'other',
        'x-scope': 'analytics:read',
        parameters: [h.idParam('export_id', 'export_')],
        responses: {
          200: h.json('The status record (also for failed and expired exports).', h.ref('ExportStatus')),
          400: noQuery,
          404: exportNotFound,
          ...h.common,
        },
      },
    },
    '/analytics/export/{export_id}/download': {
      get: {
        summary: 'Download the export file',
        operationId: 'downloadExport',
        'x-rate-limit-group': 'other',
        'x-scope': 'analytics:read',
        parameters: [h.idParam('export_id', 'export_')],
        responses: {
          200: {
            description: 'The file, Content-Disposition: attachment.',
            content: {
              'text/csv': { schema: { type: 'string' } },
              'application/json': { schema: { type: 'object' } },
              'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': {
                schema: { type: 'string', format: 'binary' },
              },
            },
          },
          400: noQuery,
          404: exportNotFound,
          409: h.error('Not completed yet (or failed): details {export_id, status}.', ['EXPORT_NOT_READY']),
          410: h.error('Expired 24 h after completion; the file is removed: details {export_id, status}.', [
            'EXPORT_EXPIRED',
          ]),
          ...h.common,
        },
      },
    },
  };
};

const int = { type: 'integer' };
const num = { type: 'number' };
const str = { type: 'string' };
const period = { type: 'object', required: ['start', 'end'], properties: { start: str, end: str } };
const metricProps = Object.fromEntries(METRICS.map((m) => [m, m === 'conversion_rate' ? num : int]));
const dated = { type: 'object', required: ['date'], properties: { date: str, ...metricProps } };
const exportFields = ['export_id', 'status', 'format', 'voucher_count', 'metrics', 'record_count', 'created_at'];

export const analyticsSchemas = {
  Performance: {
    type: 'object',
    required: ['voucher_id', 'code', 'time_period', 'currency', 'generated_at', 'performance'],
    properties: {
      voucher_id: str,
      code: str,
      time_period: period,
      currency: { type: ['string', 'null'] },
      generated_at: str,
      performance: {
        type: 'object',
        required: [
          'total_uses',
          'total_discount',
          'conversion_rate',
          'avg_order_value',
          'revenue_impact',
          'unique_customers',
          'repeat_usage',
        ],
        properties: {
          total_uses: int,
          total_discount: int,
          conversion_rate: num,
          avg_order_value: int,
          revenue_impact: {
            ...int,
            description:
              'What customers paid for the orders with this voucher, in cents. An order with several vouchers counts once across them: what was paid is shared in proportion to their discounts.',
          },
          unique_customers: int,
          repeat_usage: int,
        },
      },
      details: {
        type: 'object',
        description: 'Only with include_details=true.',
        required: ['daily', 'segments'],
        properties: {
          daily: { type: 'array', items: dated },
          segments: {
            type: 'array',
            description:
              'Per customer.segment ("unknown" when absent). A day keeps 100 segments by name; further ones that day count under "other".',
            items: { type: 'object', required: ['segment'], properties: { segment: str, ...metricProps } },
          },
        },
      },
    },
  },
  Trends: {
    type: 'object',
    required: ['voucher_id', 'code', 'interval', 'metrics', 'time_period', 'generated_at', 'trends', 'summary'],
    properties: {
      voucher_id: str,
      code: str,
      interval: { enum: ['day', 'week', 'month'] },
      metrics: { type: 'array', items: { enum: [...METRICS] } },
      time_period: period,
      generated_at: str,
      trends: { type: 'array', items: dated },
      summary: {
        type: 'object',
        required: ['total_period_uses', 'total_period_discount', 'avg_daily_uses', 'growth_rate'],
        properties: { total_period_uses: int, total_period_discount: int, avg_daily_uses: num, growth_rate: num },
      },
    },
  },
  CustomerInsights: {
    type: 'object',
    required: ['voucher_id', 'code', 'time_period', 'generated_at', 'customer_insights'],
    properties: {
      voucher_id: str,
      code: str,
      time_period: period,
      generated_at: str,
      customer_insights: {
        type: 'object',
        required: [
          'total_customers',
          'new_customers',
          'returning_customers',
          'avg_customer_value',
          'customer_lifetime_value',
          'top_customer_segments',
          'geographic_distribution',
        ],
        properties: {
          total_customers: int,
          new_customers: int,
          returning_customers: int,
          avg_customer_value: {
            ...int,
            description:
              "Mean spend per customer on this voucher in the window (an order with several vouchers: this voucher's share of what was paid).",
          },
          customer_lifetime_value: {
            ...int,
            description:
              'Mean spend per customer on all of their voucher orders ever, each order once at what the customer paid.',
          },
          top_customer_segments: {
            type: 'array',
            items: {
              type: 'object',
              required: ['segment', 'count', 'avg_order_value', 'conversion_rate'],
              properties: { segment: str, count: int, avg_order_value: int, conversion_rate: num },
            },
          },
          geographic_distribution: {
            type: 'array',
            items: {
              type: 'object',
              required: ['region', 'count', 'percentage'],
              properties: { region: str, count: int, percentage: num },
            },
          },
        },
      },
    },
  },
  ExportRecord: {
    type: 'object',
    required: [...exportFields, 'estimated_completion', 'time_period'],
    properties: {
      export_id: { type: 'string', pattern: '^export_' },
      status: { const: 'processing' },
      estimated_completion: str,
      format: { enum: [...EXPORT_FORMATS] },
      voucher_count: int,
      metrics: { type: 'array', items: { enum: [...METRICS] } },
      record_count: int,
      time_period: period,
      created_at: str,
    },
  },
  ExportStatus: {
    type: 'object',
    description:
      'While processing: estimated_completion; once completed (also after expiry): download_url, expires_at, file_size, completed_at; when failed: error.',
    required: exportFields,
    properties: {
      export_id: { type: 'string', pattern: '^export_' },
      status: { enum: ['processing', 'completed', 'failed', 'expired'] },
      format: { enum: [...EXPORT_FORMATS] },
      voucher_count: int,
      metrics: { type: 'array', items: { enum: [...METRICS] } },
      record_count: int,
      created_at: str,
      estimated_completion: str,
      download_url: {
        type: 'string',
        description:
          "{base_url}/analytics/export/{export_id}/download, from the service's configured public base URL (PUBLIC_BASE_URL; default: its listen address), never from the request's Host header.",
      },
      expires_at: str,
      file_size: { type: 'string', examples: ['2.5 MB'] },
      completed_at: str,
      error: {
        type: 'object',
        description:
          'EXPORT_FAILED. details.reason: analytics_behind (the analytics did not reach the request within 60 s; no file was written; request the export again) or generation_failed.',
        required: ['code', 'message', 'details'],
        properties: { code: str, message: str, details: { type: 'object' } },
      },
    },
    allOf: [
      { if: { properties: { status: { const: 'processing' } } }, then: { required: ['estimated_completion'] } },
      {
        if: { properties: { status: { const: 'completed' } } },
        then: { required: ['download_url', 'expires_at', 'file_size', 'completed_at'] },
      },
      { if: { properties: { status: { const: 'failed' } } }, then: { required: ['error'] } },
    ],
  },
};
