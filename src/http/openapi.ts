import fs from 'node:fs';
import * as schemas from './schemas.ts';
import { analyticsPaths, analyticsSchemas } from './openapiAnalytics.ts';
import { opsPaths, opsSchemas } from './openapiOps.ts';
import { webhookPaths, webhookSchemas } from './openapiWebhooks.ts';

const REFERENCE = new URL('../../docs/api-reference.md', import.meta.url);

const error = (description: string, codes: string[]) => ({
  description: `${description} Codes: ${codes.join(', ')}.`,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

const json = (description: string, schema: object, headers?: object) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});

const body = (schema: object) => ({ required: true, content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const idParam = (name: string, prefix: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: `^${prefix}[A-Za-z0-9]+$` },
});
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', maxLength: 255 },
  description:
    'Same key and body within 24 h: the first response again (Idempotent-Replayed: true); other body: 409 IDEMPOTENCY_KEY_REUSED',
};
const queryParams = (schema: { properties: Record<string, object> }) =>
  Object.entries(schema.properties).map(([name, s]) => ({ name, in: 'query', required: false, schema: s }));

/** The rate limit headers, shared by every answer of every operation but a 401 (no key, nothing counted). */
const rateLimitHeaders = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
};
const headerComponents = {
  'X-RateLimit-Limit': {
    description: 'Requests this API key may make to the endpoint group per window (1 minute).',
    schema: { type: 'integer' },
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Reset': {
    description: 'When the current window ends, in Unix seconds (rounded up).',
    schema: { type: 'integer' },
  },
  'Retry-After': { description: 'Seconds until the window ends.', schema: { type: 'integer', minimum: 0 } },
};
const tooManyRequests = {
  description:
    'Rate limit of the endpoint group exceeded for this API key. Code: RATE_LIMIT_EXCEEDED; details {limit, reset_at}.',
  headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};

/** 429 on an operation that also counts against a per-key quota (application/quotas.ts). */
const tooManyOrQuota = (quotas: string[]) => ({
  ...tooManyRequests,
  description: `Rate limit of the endpoint group exceeded for this API key (RATE_LIMIT_EXCEEDED, details {limit, reset_at}), or a per-key quota used up (QUOTA_EXCEEDED, details {quota: ${quotas.map((q) => `"${q}"`).join(' or ')}, limit, current, reset_at}); Retry-After says when to retry. Codes: RATE_LIMIT_EXCEEDED, QUOTA_EXCEEDED.`,
});

const common = {
  401: error('Missing or invalid API key.', ['MISSING_API_KEY', 'INVALID_API_KEY']),
  403: error('The key lacks the scope.', ['INSUFFICIENT_PERMISSIONS']),
  429: tooManyRequests,
  500: error('An unexpected failure; details {request_id} (never a stack trace).', ['INTERNAL_ERROR']),
  503: {
    ...error(
      'A store server of the service (event store, read store) cannot be reached just now; details {}. Retry after Retry-After seconds; the service recovers by itself when the server is back.',
      ['SERVICE_UNAVAILABLE'],
    ),
    headers: {
      'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
    },
  },
};

/** What every operation with a JSON body can also answer (auth.ts requireJson, body.ts parseJsonBody, errors.ts errorHandler). */
const bodyErrors = {
  413: error('The body is over 1 MB (1,048,576 bytes; a compressed body counts inflated): details {max_bytes}.', [
    'PAYLOAD_TOO_LARGE',
  ]),
  415: error(
    'The body is not sent as Content-Type: application/json, or has a charset other than UTF-8 or an unsupported Content-Encoding.',
    ['UNSUPPORTED_MEDIA_TYPE'],
  ),
};

/** A voucher write that kept losing the race to another writer (commandHandler.ts: bounded attempts). */
const concurrentModification = (
  description = 'The voucher kept being changed by another writer (retried a bounded number of times); safe to retry.',
) => error(description, ['CONCURRENT_MODIFICATION']);

type Operation = { responses: Record<string, { headers?: object }> };
/** Adds the rate limit headers to every response of every operation (except 401). */
const withRateLimitHeaders = <P extends Record<string, Record<string, unknown>>>(paths: P): P =>
  Object.fromEntries(
    Object.entries(paths).map(([template, item]) => [
      template,
      Object.fromEntries(
        Object.entries(item).map(([method, operation]) => {
          const op = operation as Operation;
          if (!op || typeof op !== 'object' || !('responses' in op)) return [method, operation];
          const responses = Object.fromEntries(
            Object.entries(op.responses).map(([status, response]) => [
              status,
              status === '401' ? response : { ...response, headers: { ...rateLimitHeaders, ...response.headers } },
            ]),
          );
          return [method, { ...op, responses }];
        }),
      ),
    ]),
  ) as P;

const MALFORMED_PATH =
  'a path parameter that is not percent-encoded UTF-8 (%zz, %FF): details [{field: "path"}], with or without a key';

type Responses = Record<string, { description: string; headers?: object }>;

/**
 * Every operation with a path parameter can answer 400 INVALID_REQUEST for a parameter that does
 * not decode (errors.ts malformedPath), before its key is checked: its 400 says so, or it gets one.
 */
const withMalformedPath = (doc: { paths: Record<string, Record<string, unknown>> }): object => ({
  ...doc,
  paths: Object.fromEntries(
    Object.entries(doc.paths).map(([template, item]) => {
      if (!template.includes('{')) return [template, item];
      const operations = Object.entries(item).map(([method, operation]) => {
        const responses = (operation as { responses?: Responses } | undefined)?.responses;
        if (!responses) return [method, operation];
        const existing = responses['400'];
        const badRequest = existing
          ? { ...existing, description: existing.description.replace(/ Codes?: /, ` Also ${MALFORMED_PATH}.$&`) }
          : {
              // listed as on the operation's other answers; optional: this one, given before the key, has none
              headers: responses['500']?.headers,
              ...error(`${MALFORMED_PATH[0]!.toUpperCase()}${MALFORMED_PATH.slice(1)}.`, ['INVALID_REQUEST']),
            };
        return [method, { ...(operation as object), responses: { ...responses, 400: badRequest } }];
      });
      return [template, Object.fromEntries(operations)];
    }),
  ),
});

/** The OpenAPI 3.1 document, built from the same JSON Schemas that validate requests. */
export const buildOpenApi = (): object => {
  const doc = withMalformedPath(openApiDocument()) as { paths: object };
  // the operator's endpoints sit at the root (their own `servers`), without rate limits
  return { ...doc, paths: { ...doc.paths, ...opsPaths } };
};

const openApiDocument = () => ({
  openapi: '3.1.0',
  info: {
    title: 'Voucher Discount Service',
    version: '1.0.0',
    description: fs.existsSync(REFERENCE) ? fs.readFileSync(REFERENCE, 'utf8') : 'See docs/api-reference.md',
  },
  servers: [{ url: '/v1', description: 'relative to the host serving this document' }],
  security: [{ bearer: [] }],
  paths: withRateLimitHeaders({
    '/vouchers': {
      post: {
        summary: 'Create a voucher',
        operationId: 'createVoucher',
        'x-rate-limit-group': 'create',
        parameters: [idempotencyKey],
        'x-scope': 'vouchers:write',
        requestBody: body(schemas.createVoucherSchema),
        responses: {
          201: json('The voucher (status active, usage_count 0).', ref('Voucher'), {
            Location: { schema: { type: 'string' } },
          }),
          400: error(
            'Invalid request (shape: INVALID_REQUEST), or an advanced config / validation_rules that make no sense (INVALID_CONFIGURATION, details {field, issue, suggestion}).',
            ['INVALID_REQUEST', 'INVALID_CONFIGURATION'],
          ),
          409: error('Code taken or key reused.', ['DUPLICATE_VOUCHER_CODE', 'IDEMPOTENCY_KEY_REUSED']),
          ...bodyErrors,
          ...common,
        },
      },
      get: {
        summary: 'List vouchers, newest first',
        operationId: 'listVouchers',
        'x-rate-limit-group': 'read',
        parameters: queryParams(schemas.listVouchersQuery),
        'x-scope': 'vouchers:read',
        responses: {
          200: json('A page of vouchers.', ref('VoucherPage')),
          400: error('Invalid query.', ['INVALID_REQUEST']),
          ...common,
        },
      },
    },
    '/vouchers/validate': {
      post: {
        summary: 'Validate a code against an order (changes nothing)',
        operationId: 'validateVoucher',
        'x-rate-limit-group': 'validate',
        'x-scope': 'vouchers:redeem',
        requestBody: body(schemas.validateSchema),
        responses: {
          200: json('The validation result.', ref('ValidationResult')),
          400: error(
            'Not applicable (CONDITION_NOT_MET: details {failed_conditions, required_conditions, met_conditions}).',
            ['INVALID_REQUEST', 'VOUCHER_INVALID', 'VOUCHER_EXPIRED', 'USAGE_LIMIT_EXCEEDED', 'CONDITION_NOT_MET'],
          ),
          404: error(
            'Unknown code. details.suggestions lists up to 5 similar active codes for a key with vouchers:read and a code of at most 32 characters; otherwise it is empty.',
            ['VOUCHER_NOT_FOUND'],
          ),
          409: error(
            'The order id already carries this voucher with another order or customer; or (with order.id) the voucher cannot stack with the vouchers on the order (STACKING_CONFLICT: details {conflicting_voucher, conflict_reason, stackable_types}).',
            ['VOUCHER_ALREADY_APPLIED', 'STACKING_CONFLICT'],
          ),
          ...bodyErrors,
          ...common,
          429: tooManyOrQuota(['outstanding_quotes']),
        },
      },
    },
    '/vouchers/apply': {
      post: {
        summary: 'Apply a code to an order',
        operationId: 'applyVoucher',
        'x-rate-limit-group': 'apply',
        parameters: [idempotencyKey],
        'x-scope': 'vouchers:redeem',
        requestBody: body(schemas.applySchema),
        responses: {
          201: json('The application.', ref('Application')),
          200: json(
            'Idempotent repeat: the stored application (header Idempotent-Replayed: true).',
            ref('Application'),
          ),
          400: error('Not applicable.', [
            'INVALID_REQUEST',
            'VOUCHER_INVALID',
            'VOUCHER_EXPIRED',
            'USAGE_LIMIT_EXCEEDED',
            'CONDITION_NOT_MET',
          ]),
          404: error(
            'Unknown code. details.suggestions as on validate: similar active codes only for a key with vouchers:read.',
            ['VOUCHER_NOT_FOUND'],
          ),
          409: error(
            'Applied to this order with another order or customer; cannot stack with the vouchers on the order; or another writer / another voucher in flight on the order (retry).',
            ['VOUCHER_ALREADY_APPLIED', 'STACKING_CONFLICT', 'IDEMPOTENCY_KEY_REUSED', 'CONCURRENT_MODIFICATION'],
          ),
          ...bodyErrors,
          ...common,
        },
      },
    },
    '/vouchers/applications/{application_id}/rollback': {
      post: {
        summary: 'Roll an application back',
        operationId: 'rollbackApplication',
        'x-rate-limit-group': 'other',
        parameters: [idParam('application_id', 'va_')],
        'x-scope': 'vouchers:redeem',
        requestBody: { required: false, content: { 'application/json': { schema: schemas.rollbackSchema } } },
        responses: {
          200: json('The application, status rolled_back.', ref('Application')),
          400: error('Invalid body (an unknown member, reason over 500 characters, not JSON).', ['INVALID_REQUEST']),
          404: error('Unknown application.', ['APPLICATION_NOT_FOUND']),
          409: concurrentModification(
            'The voucher or the order kept being changed by another writer (retried a bounded number of times); safe to retry.',
          ),
          ...bodyErrors,
          ...common,
        },
      },
    },
    '/vouchers/{voucher_id}': {
      parameters: [idParam('voucher_id', 'v_')],
      get: {
        summary: 'Retrieve a voucher with its latest 100 applications',
        operationId: 'getVoucher',
        'x-rate-limit-group': 'read',
        'x-scope': 'vouchers:read',
        responses: {
          200: json('The voucher.', ref('VoucherWithHistory')),
          400: error('A query parameter was sent (this operation takes none).', ['INVALID_REQUEST']),
          404: error('Unknown id.', ['VOUCHER_NOT_FOUND']),
          ...common,
        },
      },
      put: {
        summary:
          'Update value, currency, conditions (merged), config (replaced), validation_rules (replaced; null removes) or status',
        operationId: 'updateVoucher',
        'x-rate-limit-group': 'other',
        'x-scope': 'vouchers:write',
        requestBody: body(schemas.updateVoucherSchema),
        responses: {
          200: json('The voucher.', ref('Voucher')),
          400: error(
            'Invalid, or an immutable field (code, type, created_at, id) sent; or a config / validation_rules that make no sense.',
            ['INVALID_REQUEST', 'INVALID_CONFIGURATION'],
          ),
          404: error('Unknown id.', ['VOUCHER_NOT_FOUND']),
          409: concurrentModification(),
          ...bodyErrors,
          ...common,
        },
      },
      delete: {
        summary: 'Deactivate (soft delete); repeating it is 200 again',
        operationId: 'deleteVoucher',
        'x-rate-limit-group': 'other',
        'x-scope': 'vouchers:delete',
        responses: {
          200: json('The deactivated voucher.', ref('Deleted')),
          404: error('Unknown id.', ['VOUCHER_NOT_FOUND']),
          409: concurrentModification(),
          ...common,
        },
      },
    },
    '/vouchers/{voucher_id}/applications': {
      get: {
        summary: 'All applications of a voucher, newest first',
        operationId: 'listApplications',
        'x-rate-limit-group': 'read',
        'x-scope': 'vouchers:read',
        parameters: [idParam('voucher_id', 'v_'), ...queryParams(schemas.pageQuery)],
        responses: {
          200: json(
            'A page of applications. `total` counts every application ever recorded on the voucher, rolled back ones included.',
            ref('UsagePage'),
          ),
          400: error('Invalid query (limit, offset, or a parameter this operation does not take).', [
            'INVALID_REQUEST',
          ]),
          404: error('Unknown id.', ['VOUCHER_NOT_FOUND']),
          ...common,
        },
      },
    },
    ...analyticsPaths({ error, json, body, ref, idParam, common, bodyErrors, tooManyOrQuota }),
    ...webhookPaths({ error, json, body, ref, idParam, common, bodyErrors }),
  }),
  components: {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'sk_test_… (sandbox) or sk_live_… (production)' },
      metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (GET /metrics only, when set)' },
    },
    headers: headerComponents,
    schemas: { ...componentSchemas, ...analyticsSchemas, ...webhookSchemas, ...opsSchemas },
  },
});

const nullable = (type: string) => ({ type: [type, 'null'] });
const voucher = {
  type: 'object',
  required: [
    'id',
    'code',
    'type',
    'value',
    'currency',
    'conditions',
    'status',
    'usage_count',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string', pattern: '^v_' },
    code: { type: 'string' },
    type: { type: 'string', enum: schemas.voucherTypes },
    value: nullable('number'),
    currency: nullable('string'),
    config: { type: 'object', description: 'Advanced types only' },
    conditions: schemas.conditionsSchema,
    validation_rules: schemas.validationRulesSchema,
    status: { type: 'string', enum: ['active', 'inactive', 'expired'] },
    usage_count: { type: 'integer', minimum: 0 },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
};
const finalAmountDescription =
  'What the order comes to with this voucher and the vouchers already on it: order.value minus their discounts (order.value − discount_amount for the first voucher on an order).';
const usage = {
  type: 'object',
  required: ['id', 'order_id', 'customer_id', 'discount_amount', 'final_amount', 'currency', 'status', 'applied_at'],
  properties: {
    id: { type: 'string', pattern: '^va_' },
    order_id: { type: 'string' },
    customer_id: nullable('string'),
    discount_amount: { type: 'integer' },
    final_amount: { type: 'integer', description: finalAmountDescription },
    currency: nullable('string'),
    status: { type: 'string', enum: ['applied', 'rolled_back'] },
    applied_at: { type: 'string' },
  },
};
const page = (item: object) => ({
  type: 'object',
  required: ['data', 'total', 'limit', 'offset', 'has_more'],
  properties: {
    data: { type: 'array', items: item },
    total: { type: 'integer', minimum: 0 },
    limit: { type: 'integer', minimum: 1 },
    offset: { type: 'integer', minimum: 0 },
    has_more: { type: 'boolean' },
  },
});
const componentSchemas = {
  Voucher: voucher,
  VoucherWithHistory: {
    ...voucher,
    required: [...voucher.required, 'usage_history'],
    properties: { ...voucher.properties, usage_history: { type: 'array', items: usage, maxItems: 100 } },
  },
  VoucherPage: page(voucher),
  UsagePage: page(usage),
  Deleted: {
    type: 'object',
    required: ['id', 'code', 'status', 'deleted_at'],
    properties: {
      id: { type: 'string', pattern: '^v_' },
      code: { type: 'string' },
      status: { const: 'inactive' },
      deleted_at: { type: 'string' },
    },
  },
  Application: {
    type: 'object',
    required: [
      'id',
      'voucher',
      'order_id',
      'customer_id',
      'discount_amount',
      'final_amount',
      'currency',
      'status',
      'applied_at',
    ],
    properties: {
      id: { type: 'string', pattern: '^va_' },
      voucher: {
        type: 'object',
        required: ['id', 'code'],
        properties: { id: { type: 'string', pattern: '^v_' }, code: { type: 'string' } },
      },
      order_id: { type: 'string' },
      customer_id: nullable('string'),
      discount_amount: { type: 'integer' },
      final_amount: { type: 'integer', description: finalAmountDescription },
      currency: nullable('string'),
      status: { type: 'string', enum: ['applied', 'rolled_back'] },
      applied_at: { type: 'string' },
    },
  },
  ValidationResult: {
    type: 'object',
    required: [
      'is_valid',
      'voucher',
      'discount_amount',
      'final_amount',
      'currency',
      'validation_details',
      'applied_to',
      'conditions_met',
    ],
    properties: {
      is_valid: { const: true },
      voucher: {
        type: 'object',
        required: ['id', 'code', 'type', 'value'],
        properties: {
          id: { type: 'string', pattern: '^v_' },
          code: { type: 'string' },
          type: { type: 'string', enum: schemas.voucherTypes },
          value: nullable('number'),
        },
      },
      discount_amount: { type: 'integer' },
      final_amount: { type: 'integer', description: finalAmountDescription },
      currency: nullable('string'),
      validation_details: {
        type: 'object',
        description: 'The advanced types add their own members (see the reference, "Advanced types").',
        required: ['min_order_value_met', 'usage_limit_not_exceeded', 'valid_date_range'],
        properties: {
          min_order_value_met: { type: 'boolean' },
          usage_limit_not_exceeded: { type: 'boolean' },
          valid_date_range: { type: 'boolean' },
          customer_eligible: { type: 'boolean' },
        },
      },
      applied_to: {
        type: 'array',
        items: {
          type: 'object',
          required: ['item_id', 'original_price', 'discount_amount', 'final_price'],
          properties: {
            item_id: { type: 'string' },
            original_price: { type: 'integer' },
            discount_amount: { type: 'integer' },
            final_price: { type: 'integer' },
          },
        },
      },
      conditions_met: { type: 'array', items: { type: 'string' } },
    },
  },
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'details'],
        properties: {
          code: { type: 'string' },
          message: { type: 'string' },
          details: {
            type: ['object', 'array'],
            description: 'INVALID_REQUEST: an array of at most 20 {field, message}; other codes: an object',
          },
          details_truncated: {
            const: true,
            description: 'INVALID_REQUEST only, and only when details leaves problems out',
          },
          details_total: {
            type: ['integer', 'null'],
            description:
              'With details_truncated: how many problems were found; null when the body was too large to check whole and only the first problem was looked for',
          },
        },
      },
    },
  },
};
