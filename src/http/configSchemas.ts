/**
 * JSON Schemas of the advanced-type configs and of validation_rules (re-exported by schemas.ts).
 */
export const timestamp = {
  type: 'string',
  format: 'date-time',
  description: 'ISO 8601 timestamp; stored and shown in UTC with second precision',
} as const;
export const currency = {
  type: 'string',
  pattern: '^[A-Z]{3}$',
  description: 'ISO 4217 currency code, e.g. USD',
} as const;

/*
 * Advanced-type configs and validation rules. The schemas fix the SHAPE (members, JSON types,
 * required members, no unknown members: 400 INVALID_REQUEST); every bound and meaning (a
 * percentage above 100, overlapping tiers, an unknown operator, ...) is the domain's, answered
 * with 400 INVALID_CONFIGURATION {field, issue, suggestion} (src/domain/discount/*.ts). On update
 * the type is known only to the stored voucher, so there the whole config is checked by the
 * domain (shape errors are INVALID_CONFIGURATION too).
 */
const obj = (properties: Record<string, object>, required: string[] = [], description?: string) =>
  ({
    type: 'object',
    additionalProperties: false,
    required,
    properties,
    ...(description ? { description } : {}),
  }) as const;
const discountKind = { type: 'string', description: 'percentage or fixed' } as const;
const discountNumber = {
  type: 'number',
  description: 'percentage: 0 to 100 (2 decimals); fixed: integer cents 1 to 100000000',
} as const;
const strings = (description: string) => ({ type: 'array', items: { type: 'string' }, description }) as const;
const checkValue = {
  type: ['string', 'number'],
  description: 'integer (order_value, customer_orders_count), timestamp (customer_registration_date) or string',
} as const;

export const bogoConfigSchema = obj(
  {
    buy_quantity: { type: 'integer', description: 'Eligible units bought per group, 1 to 1000' },
    get_quantity: { type: 'integer', description: 'Further eligible units discounted per group, 1 to 1000' },
    get_discount: { ...discountNumber, description: 'Discount per get unit; default 100 (free)' },
    get_discount_type: { ...discountKind, description: 'percentage (default) or fixed (cents per unit)' },
    applicable_items: strings('Item ids eligible (absent or empty: all)'),
    excluded_items: strings('Item ids never eligible'),
    min_order_value: { type: 'integer', 'x-unit': 'cents', description: 'Minimum order.value in cents' },
    max_uses_per_order: { type: 'integer', description: 'Most groups discounted per order (at least 1)' },
  },
  ['buy_quantity', 'get_quantity'],
  'bogo: in each complete group of buy+get units (sorted by price, highest first) the get cheapest units are discounted',
);

export const tieredConfigSchema = obj(
  {
    tiers: {
      type: 'array',
      description: '1 to 50 tiers by ascending min_value, not overlapping (bounds inclusive)',
      items: obj(
        {
          min_value: { type: 'integer', 'x-unit': 'cents' },
          max_value: { type: ['integer', 'null'], 'x-unit': 'cents', description: 'null: no upper bound' },
          discount: discountNumber,
          discount_type: discountKind,
        },
        ['min_value', 'discount', 'discount_type'],
      ),
    },
    currency,
  },
  ['tiers'],
  'tiered: the one tier with min_value <= order.value <= max_value applies',
);

export const conditionalConfigSchema = obj(
  {
    conditions: {
      type: 'array',
      description: '1 to 20 conditions',
      items: obj(
        {
          type: {
            type: 'string',
            description:
              'customer_segment, order_value, customer_registration_date, customer_orders_count, customer_region, item_category',
          },
          operator: { type: 'string', description: 'eq, gt, gte, lt, lte (string-valued types: eq)' },
          value: checkValue,
        },
        ['type', 'operator', 'value'],
      ),
    },
    discount: discountNumber,
    discount_type: discountKind,
    all_conditions_required: { type: 'boolean', description: 'true (default): all conditions; false: any one' },
  },
  ['conditions', 'discount', 'discount_type'],
);

export const stackableConfigSchema = obj(
  {
    base_discount: discountNumber,
    base_discount_type: discountKind,
    stack_rules: obj({
      max_stack_count: { type: 'integer', description: 'Most vouchers on one order, this one included' },
      max_total_discount: {
        type: 'number',
        description: 'Most total discount on the order, as a percentage of order.value',
      },
      stackable_with: strings('Voucher types this one may join (absent: all)'),
      excluded_types: strings('Voucher types this one never joins'),
    }),
    priority: { type: 'integer', description: 'Lower numbers are computed (and must be applied) first; default 0' },
  },
  ['base_discount', 'base_discount_type'],
);

const ruleOperator = { type: 'string', description: 'eq, gt, gte, lt, lte' } as const;
const ruleSchemas = {
  order_value: obj(
    { type: { const: 'order_value' }, operator: ruleOperator, value: { type: 'integer', 'x-unit': 'cents' }, currency },
    ['type', 'operator', 'value'],
  ),
  items: obj(
    {
      type: { const: 'items' },
      rules: {
        type: 'array',
        items: obj({
          item_id: { type: 'string' },
          min_quantity: { type: 'integer' },
          max_quantity: { type: 'integer' },
          category: { type: 'string' },
          min_value: { type: 'integer', 'x-unit': 'cents' },
        }),
      },
    },
    ['type', 'rules'],
  ),
  customer: obj(
    {
      type: { const: 'customer' },
      rules: {
        type: 'array',
        items: obj({
          segment: { type: 'string' },
          min_orders: { type: 'integer' },
          registration_date: obj({ operator: ruleOperator, value: timestamp }, ['operator', 'value']),
        }),
      },
    },
    ['type', 'rules'],
  ),
};

export const validationRulesSchema = {
  type: 'array',
  maxItems: 20,
  description: 'Every rule must hold, else CONDITION_NOT_MET',
  items: {
    type: 'object',
    required: ['type'],
    properties: { type: { type: 'string', description: 'order_value, items or customer' } },
    allOf: Object.entries(ruleSchemas).map(([type, schema]) => ({
      if: { properties: { type: { const: type } } },
      then: schema,
    })),
  },
} as const;

export const advancedConfigs = {
  bogo: bogoConfigSchema,
  tiered: tieredConfigSchema,
  conditional: conditionalConfigSchema,
  stackable: stackableConfigSchema,
} as const;
