/**
 * JSON Schemas: the single source for request validation (compiled by ajv in validation.ts) and
 * for the OpenAPI document (openapi.ts). Rules that need the stored voucher (a percentage on
 * update, valid_from before valid_until after a merge) are checked in the domain.
 */
import { advancedConfigs, currency, timestamp, validationRulesSchema } from './configSchemas.ts';

const MAX_CENTS = 1_000_000_000_000; // 10 billion in major units: far above any real order

export { currency, timestamp, validationRulesSchema };
export {
  bogoConfigSchema,
  conditionalConfigSchema,
  stackableConfigSchema,
  tieredConfigSchema,
} from './configSchemas.ts';
export const code = {
  type: 'string',
  pattern: '^[A-Za-z0-9_-]{1,64}$',
  description: '1 to 64 characters of A-Z a-z 0-9 _ -; unique per environment, case-insensitively',
} as const;
const cents = (description: string) =>
  ({ type: 'integer', minimum: 0, maximum: MAX_CENTS, 'x-unit': 'cents', description }) as const;
const productIds = { type: 'array', maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 128 } } as const;
export const voucherTypes = ['percentage', 'fixed', 'bogo', 'tiered', 'conditional', 'stackable'] as const;

const conditionProperties = {
  min_order_value: cents('Minimum order value (order.value) in cents'),
  max_uses: {
    type: 'integer',
    minimum: 1,
    description: 'Maximum total uses; when reached, status stays active and redemption gives USAGE_LIMIT_EXCEEDED',
  },
  valid_from: timestamp,
  valid_until: timestamp,
  customer_limit: {
    type: 'integer',
    minimum: 1,
    description: 'Maximum uses per customer; requests must then carry customer.id',
  },
  product_ids: { ...productIds, description: 'Only these order items (by id) form the discount base' },
  excluded_product_ids: { ...productIds, description: 'These order items (by id) never form the discount base' },
} as const;

export const conditionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: conditionProperties,
} as const;

/** On update: members not sent keep their stored values; a member sent as null is removed. */
export const conditionsPatchSchema = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(
    Object.entries(conditionProperties).map(([k, s]) => [k, { anyOf: [s, { type: 'null' }] }]),
  ),
} as const;

export const createVoucherSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['code', 'type'],
  properties: {
    code,
    type: { type: 'string', enum: voucherTypes },
    value: {
      type: 'number',
      minimum: 0,
      description:
        'percentage and fixed only (required): percentage 0 to 100 with at most 2 decimals; fixed integer cents 1 to 100000000',
    },
    currency: {
      ...currency,
      description: 'Optional: orders in another currency get VOUCHER_INVALID currency_mismatch',
    },
    config: {
      type: 'object',
      description: 'bogo, tiered, conditional, stackable only (required): the schema of the type',
    },
    conditions: conditionsSchema,
    validation_rules: validationRulesSchema,
  },
  allOf: Object.entries(advancedConfigs).map(([type, schema]) => ({
    if: { properties: { type: { const: type } }, required: ['type'] },
    then: { properties: { config: schema } },
  })),
} as const;

export const updateVoucherSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    value: { type: 'number', minimum: 0 },
    currency: { anyOf: [currency, { type: 'null' }] },
    conditions: conditionsPatchSchema,
    status: { type: 'string', enum: ['active', 'inactive'] },
    config: {
      type: 'object',
      description:
        'Advanced types: replaces the stored config whole; checked like on create (every problem is INVALID_CONFIGURATION)',
    },
    validation_rules: {
      anyOf: [validationRulesSchema, { type: 'null' }],
      description: 'Replaces the stored rules; null removes them',
    },
  },
} as const;

export const IMMUTABLE_FIELDS = ['id', 'code', 'type', 'created_at'] as const;

const orderItem = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'price', 'quantity'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 128 },
    price: cents('Unit price in cents'),
    quantity: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    category: { type: 'string', maxLength: 128 },
  },
} as const;

export const orderSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['value'],
  properties: {
    id: {
      type: 'string',
      minLength: 1,
      maxLength: 128,
      description: 'On validate: keep the quote 30 minutes for apply',
    },
    value: cents('Order value in cents before discount; the sum of item lines may not exceed it'),
    currency,
    items: { type: 'array', maxItems: 1000, items: orderItem },
  },
} as const;

export const customerSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 128 },
    segment: { type: 'string', maxLength: 128 },
    registration_date: timestamp,
    orders_count: { type: 'integer', minimum: 0 },
    region: { type: 'string', maxLength: 128 },
  },
} as const;

const redeemCode = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const validateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['code', 'order'],
  properties: { code: redeemCode, order: orderSchema, customer: customerSchema },
} as const;

export const applySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['code', 'order_id'],
  properties: {
    code: redeemCode,
    order_id: { type: 'string', minLength: 1, maxLength: 128 },
    order: orderSchema,
    customer: customerSchema,
  },
} as const;

export const rollbackSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { reason: { type: 'string', maxLength: 500 } },
} as const;

/** The largest list `offset`: far beyond any list, and an integer every layer holds exactly. */
export const MAX_OFFSET = 1_000_000_000;

const pageProperties = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
  offset: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 },
} as const;

/** A timestamp, or a date (YYYY-MM-DD) standing for the start of that day in UTC. */
const timestampOrDate = (description: string) =>
  ({ anyOf: [timestamp, { type: 'string', format: 'date' }], description }) as const;

export const listVouchersQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...pageProperties,
    status: { type: 'string', enum: ['active', 'inactive', 'expired'] },
    type: { type: 'string', enum: voucherTypes },
    created_after: timestampOrDate(
      'Created after this instant (exclusive); a date means from the start of that day (UTC), the day included',
    ),
    created_before: timestampOrDate(
      'Created before this instant (exclusive); a date means before the start of that day (UTC)',
    ),
  },
} as const;

export const pageQuery = { type: 'object', additionalProperties: false, properties: pageProperties } as const;
export const emptyQuery = { type: 'object', additionalProperties: false, properties: {} } as const;
