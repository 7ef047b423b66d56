/**
 * Valid values from the service's JSON Schemas (src/http/schemas.ts, the same objects the OpenAPI
 * document and ajv use), as fast-check arbitraries: the bodies and query strings the fuzzer then
 * mutates. Only the keywords those schemas use are understood: type (also a list), enum, const,
 * pattern, format date-time, minimum/maximum, minLength/maxLength, minItems/maxItems,
 * uniqueItems, properties/required/additionalProperties, anyOf/oneOf, and `allOf` of
 * `if {properties: {k: {const}}} then S` branches (a voucher's config by type, a rule by type),
 * resolved by picking one branch and merging its `then` into the object.
 *
 * Values stay small (arrays of at most 3 elements, strings of at most 12 characters where the
 * schema allows more): size is the hostile mutations' business (hostile.ts).
 */
import fc from 'fast-check';

export type Schema = Record<string, unknown>;

/** Values to use for a member of this name instead of the schema's (a real voucher code, say). */
export type Hints = Record<string, fc.Arbitrary<unknown>>;

const MAX_ITEMS = 3;
const MAX_STRING = 12;

const asSchema = (value: unknown): Schema => (value && typeof value === 'object' ? (value as Schema) : {});

const stringOf = (schema: Schema): fc.Arbitrary<string> => {
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern));
  if (schema.format === 'date-time')
    return fc
      .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
      .map((d) => d.toISOString());
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const maxLength = Math.max(minLength, Math.min(MAX_STRING, Number(schema.maxLength ?? MAX_STRING)));
  return fc.string({ minLength, maxLength });
};

const integerOf = (schema: Schema): fc.Arbitrary<number> => {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -1_000_000;
  const max = typeof schema.maximum === 'number' ? schema.maximum : 1_000_000_000;
  // mostly small values, where the domain's checks (a percentage up to 100, ...) pass
  return fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: Math.max(min, 0), max: Math.max(Math.min(max, 100), min) }) },
    { weight: 1, arbitrary: fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }) },
  );
};

const numberOf = (schema: Schema): fc.Arbitrary<number> =>
  fc.oneof(
    integerOf(schema),
    fc.double({
      min: typeof schema.minimum === 'number' ? schema.minimum : -1e6,
      max: typeof schema.maximum === 'number' ? schema.maximum : 1e6,
      noNaN: true,
      noDefaultInfinity: true,
    }),
  );

/** The `if {properties: {k: {const: v}}} then S` branches of an allOf, as [k, v, S]. */
const conditionalBranches = (schema: Schema): Array<[string, unknown, Schema]> =>
  Array.isArray(schema.allOf)
    ? schema.allOf.flatMap((entry: Schema) => {
        const properties = asSchema(asSchema(entry.if).properties);
        const [member] = Object.keys(properties);
        if (member === undefined || !('const' in asSchema(properties[member])) || !entry.then) return [];
        return [[member, asSchema(properties[member]).const, asSchema(entry.then)] as [string, unknown, Schema]];
      })
    : [];

/** `base` with `then` laid over it: properties merged (then's win), required joined, `member` fixed. */
const mergeBranch = (base: Schema, member: string, value: unknown, then: Schema): Schema => ({
  ...base,
  ...then,
  allOf: undefined,
  properties: { ...asSchema(base.properties), ...asSchema(then.properties), [member]: { const: value } },
  required: [...new Set([...((base.required as string[]) ?? []), ...((then.required as string[]) ?? []), member])],
});

const objectOf = (schema: Schema, hints: Hints): fc.Arbitrary<Record<string, unknown>> => {
  const properties = asSchema(schema.properties);
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const members: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, member] of Object.entries(properties))
    members[name] = hints[name] ?? valueOf(asSchema(member), hints);
  return fc.record(members, {
    requiredKeys: Object.keys(members).filter((name) => required.has(name)),
  }) as fc.Arbitrary<Record<string, unknown>>;
};

/** An arbitrary of values that `schema` accepts (as far as the keywords above go). */
export const valueOf = (schema: Schema, hints: Hints = {}): fc.Arbitrary<unknown> => {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((s) => valueOf(s, hints)));
  const branches = conditionalBranches(schema);
  if (branches.length > 0) {
    const base = { ...schema, allOf: undefined };
    return fc.oneof(...branches.map(([member, value, then]) => valueOf(mergeBranch(base, member, value, then), hints)));
  }
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type) => valueOf({ ...schema, type }, hints)));
  switch (schema.type) {
    case 'object':
      return objectOf(schema, hints);
    case 'array': {
      const items = asSchema(schema.items);
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const maxLength = Math.max(minLength, Math.min(MAX_ITEMS, Number(schema.maxItems ?? MAX_ITEMS)));
      if (schema.uniqueItems === true && Array.isArray(items.enum))
        return fc.subarray(items.enum as unknown[], { minLength: Math.min(minLength, items.enum.length) });
      return fc.array(valueOf(items, hints), { minLength, maxLength });
    }
    case 'string':
      return stringOf(schema);
    case 'integer':
      return integerOf(schema);
    case 'number':
      return numberOf(schema);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
};
