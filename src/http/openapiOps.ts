/** The operator's endpoints in the OpenAPI document: at the root (not under /v1), without an API key. */

const root = [{ url: '/', description: 'the service root: these paths are not under /v1' }];
const internalError = {
  description: 'An unexpected failure; details {request_id} (never a stack trace). Codes: INTERNAL_ERROR.',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};
const status = (value: string) => ({
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: { status: { const: value } },
});

export const opsSchemas = {
  NotReady: {
    type: 'object',
    required: ['status', 'failures'],
    additionalProperties: false,
    properties: {
      status: { const: 'not_ready' },
      failures: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['check', 'reason'],
          additionalProperties: false,
          properties: {
            check: {
              type: 'string',
              description:
                '`<environment>.<store>` (events, reads, analytics_reads, kv, webhooks), `<environment>.projector.core`, or `service`',
            },
            reason: {
              type: 'string',
              description: '`unreachable`, `timed out`, `lag <n> > <bound> positions`, or `shutting down`',
            },
          },
        },
      },
    },
  },
};

export const opsPaths = {
  '/healthz': {
    servers: root,
    get: {
      summary: 'Liveness: the process serves',
      operationId: 'healthz',
      security: [],
      responses: {
        200: {
          description: 'The process serves requests. Reads no store.',
          content: { 'application/json': { schema: status('ok') } },
        },
        500: internalError,
      },
    },
  },
  '/readyz': {
    servers: root,
    get: {
      summary: 'Readiness: every store answers and the core projector is caught up',
      operationId: 'readyz',
      security: [],
      responses: {
        200: {
          description:
            "Every environment's stores answered a cheap read within 2 s, and each environment's core projection group is at most READY_MAX_PROJECTOR_LAG positions behind the event store's head. In a process role (ROLE) the role's checks: `api` the stored core checkpoint's lag; `projector` the event store, read stores, lag and its leases (`<env>.lease.core`, `<env>.lease.analytics`); `publisher` the event store, deliveries store, `<env>.lease.publisher` and `<env>.bus` with Kafka; `dispatcher` the deliveries store, `<env>.lease.dispatcher` and `<env>.bus`. The `projector`, `publisher` and `dispatcher` roles serve only /healthz, /health, /readyz and /metrics.",
          content: { 'application/json': { schema: status('ready') } },
        },
        503: {
          description:
            'Not ready: the failed checks, each with a short reason (the errors themselves go to the log). Also while the service shuts down.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/NotReady' } } },
        },
        500: internalError,
      },
    },
  },
  '/metrics': {
    servers: root,
    get: {
      summary: 'Prometheus metrics',
      operationId: 'metrics',
      security: [{ metricsToken: [] }, {}],
      description:
        'The Prometheus text exposition format (version 0.0.4). Absent (404) with METRICS=off. With METRICS_TOKEN set, it needs `Authorization: Bearer <METRICS_TOKEN>`; otherwise no authentication.',
      responses: {
        200: {
          description:
            'http_request_duration_seconds{method,route,status}, event_store_append_duration_seconds{environment}, projector_lag{environment,group}, webhook_deliveries_pending{environment,endpoint}, webhook_deliveries_failed{environment,endpoint}, and the process and Node.js metrics of prom-client.',
          content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } },
        },
        401: {
          description:
            'METRICS_TOKEN is set and the request has no Authorization header (MISSING_API_KEY) or another token (INVALID_API_KEY). Codes: MISSING_API_KEY, INVALID_API_KEY.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
        500: internalError,
      },
    },
  },
};
