import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { shownField } from '../domain/shown.ts';
import { invalidRequest } from '../domain/errors.ts';
import { isTimestamp } from '../domain/clock.ts';

// ajv-formats is CommonJS: under NodeNext interop its default export arrives nested in `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

/**
 * The detailed pass (every problem) runs only on bodies of at most this many JSON values; a
 * larger invalid body is answered with the first problem found. A legitimate body stays far
 * below it (an order of 1,000 items with four members each is about 5,000 values). Measured
 * (docs/decisions/016): ajv with `allErrors` spends about 2 µs per problem it collects, and a body
 * of this many values has at most a few problems per value, so the detailed pass stays within
 * tens of milliseconds; the fail-fast pass is under a millisecond whatever the body.
 */
export const DETAILED_PASS_MAX_VALUES = 10_000;

/**
 * Annotation keywords the request schemas carry for readers (and the OpenAPI document):
 * `x-unit: "cents"` marks an amount of money, so an error on it can say so.
 */
const ANNOTATIONS = ['x-unit'];

const instance = (options: Options): Ajv => {
  const ajv = addFormats(
    new Ajv({ strict: true, allowUnionTypes: true, verbose: true, keywords: ANNOTATIONS, ...options }),
  );
  // RFC 3339 allows a leap second (23:59:60) and offsets that move a date past year 9999; neither
  // is an instant the service can store, so the format is narrowed to what isTimestamp accepts.
  ajv.addFormat('date-time', { type: 'string', validate: isTimestamp });
  return ajv;
};

/** Fail-fast: stops at the first problem (cost bounded by the body, whatever it holds). */
const fast = instance({ allErrors: false });
/** Every problem, run only on bodies of at most DETAILED_PASS_MAX_VALUES values. */
const detailed = instance({ allErrors: true });
const queryOptions: Options = { coerceTypes: true, useDefaults: true };
const fastQuery = instance({ ...queryOptions, allErrors: false });
const detailedQuery = instance({ ...queryOptions, allErrors: true });

const fieldOf = (error: ErrorObject): string => {
  const base = error.instancePath
    .slice(1)
    .replaceAll('/', '.')
    .replace(/\.(\d+)(?=\.|$)/g, '[$1]');
  const child =
    error.keyword === 'required'
      ? String(error.params.missingProperty)
      : error.keyword === 'additionalProperties'
        ? String(error.params.additionalProperty)
        : '';
  return shownField([base, child].filter(Boolean).join('.') || 'body');
};

/** What a pattern means, said in words instead of the regular expression. */
const PATTERN_MESSAGES: Record<string, string> = {
  '^[A-Z]{3}$': 'must be an upper-case ISO 4217 currency code such as USD',
  '^[A-Za-z0-9_-]{1,64}$': 'must be 1 to 64 characters of A-Z a-z 0-9 _ -',
};

const FORMAT_MESSAGES: Record<string, string> = {
  'date-time': 'must be an ISO 8601 timestamp with a zone, such as 2026-01-31T00:00:00Z (seconds 00 to 59)',
  date: 'must be a date such as 2026-01-31',
};

const isCents = (error: ErrorObject): boolean =>
  (error.parentSchema as Record<string, unknown> | undefined)?.['x-unit'] === 'cents';

const messageOf = (error: ErrorObject): string => {
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not allowed';
    case 'enum':
      return `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`;
    case 'type':
      if (error.params.type === 'integer' && isCents(error))
        return 'must be a whole number of cents (an integer: 19.99 is sent as 1999)';
      return error.message ?? 'is invalid';
    case 'minimum':
    case 'maximum': {
      const bound = `must be ${error.keyword === 'minimum' ? 'at least' : 'at most'} ${String(error.params.limit)}`;
      return isCents(error) ? `${bound} cents` : bound;
    }
    case 'maxItems': {
      const length = Array.isArray(error.data) ? `; it has ${error.data.length}` : '';
      return `must have at most ${String(error.params.limit)} items${length}`;
    }
    case 'pattern':
      return PATTERN_MESSAGES[String(error.params.pattern)] ?? error.message ?? 'is invalid';
    case 'format':
      return FORMAT_MESSAGES[String(error.params.format)] ?? error.message ?? 'is invalid';
    default:
      return error.message ?? 'is invalid';
  }
};

/** "must be a date" after "must be a timestamp": "must be a timestamp or a date". */
const alternatives = (messages: string[]): string =>
  messages.map((m, i) => (i > 0 && messages[0]!.startsWith('must be ') ? m.replace(/^must be /, '') : m)).join(' or ');

type Problem = { field: string; message: string };

/**
 * Ajv errors as the spec's INVALID_REQUEST details: one {field, message} per field, in the order
 * ajv found them. For a value that fails every alternative of an `anyOf`, the alternatives of
 * its own JSON type speak ("usd" for "a currency or null": the currency's message; a list with a
 * bad item: that item), and the others' complaints ("must be null") are left out; when its type
 * fits all of them or none (a timestamp or a date; a number for a timestamp or null), their
 * messages are joined with "or".
 */
export const toProblems = (errors: ErrorObject[] | null | undefined): Problem[] => {
  const list = errors ?? [];
  const dropped = new Set<ErrorObject>();
  list.forEach((anyOf, at) => {
    if (anyOf.keyword !== 'anyOf') return;
    // ajv reports an anyOf's alternatives just before it: walk back over them, grouped by branch
    const branches = new Map<string, ErrorObject[]>();
    const prefix = `${anyOf.schemaPath}/`;
    for (let i = at - 1; i >= 0; i -= 1) {
      const error = list[i]!;
      if (!error.schemaPath.startsWith(prefix)) break;
      const branch = error.schemaPath.slice(prefix.length).split('/')[0]!;
      const group = branches.get(branch);
      if (group) group.push(error);
      else branches.set(branch, [error]);
    }
    // the alternatives whose type the value has (a string for "a timestamp or null") speak alone
    const typeFailed = (group: ErrorObject[]) =>
      group.some((e) => e.keyword === 'type' && e.instancePath === anyOf.instancePath);
    const matched = [...branches.values()].filter((group) => !typeFailed(group));
    if (matched.length === 0 || matched.length === branches.size) return;
    for (const group of branches.values()) {
      if (matched.includes(group)) continue;
      for (const e of group) if (e.instancePath === anyOf.instancePath) dropped.add(e);
    }
  });
  const alternativesAt = new Set(list.filter((e) => e.keyword === 'anyOf').map(fieldOf));
  const seen = new Map<string, string[]>();
  for (const error of list) {
    if (error.keyword === 'if' || error.keyword === 'anyOf' || error.keyword === 'oneOf' || dropped.has(error))
      continue;
    const field = fieldOf(error);
    const messages = seen.get(field);
    const message = messageOf(error);
    if (!messages) seen.set(field, [message]);
    else if (alternativesAt.has(field) && !messages.includes(message)) messages.push(message);
  }
  return [...seen].map(([field, messages]) => ({ field, message: alternatives(messages) }));
};

/**
 * Whether `value` holds at most `limit` JSON values (itself, every member and every item),
 * counted without recursion and stopping as soon as the limit is passed.
 */
export const hasAtMostValues = (value: unknown, limit: number): boolean => {
  const stack: unknown[] = [value];
  let count = 0;
  while (stack.length > 0) {
    const next = stack.pop();
    count += 1;
    if (count > limit) return false;
    if (next === null || typeof next !== 'object') continue;
    const children = Array.isArray(next) ? next : Object.values(next as Record<string, unknown>);
    if (count + stack.length + children.length > limit) return false;
    for (const child of children) stack.push(child);
  }
  return true;
};

export interface Validator<T> {
  (value: unknown): T;
}

/** Which passes a validator ran and how many ajv errors each produced (for tests and measurements). */
export type PassObserver = (pass: 'fast' | 'detailed', errors: number) => void;

const compileWith = <T>(
  instances: { fast: Ajv; detailed: Ajv },
  schema: object,
  root: string,
  observe?: PassObserver,
): Validator<T> => {
  const first: ValidateFunction = instances.fast.compile(schema);
  const all: ValidateFunction = instances.detailed.compile(schema);
  return (value: unknown): T => {
    if (first(value)) return value as T;
    observe?.('fast', first.errors?.length ?? 0);
    // Every problem only when the body is small enough for the detailed pass to be cheap;
    // otherwise the first problem found, and `total: null` says that others were not looked for.
    const complete = hasAtMostValues(value, DETAILED_PASS_MAX_VALUES);
    let errors = first.errors;
    if (complete) {
      all(value);
      errors = all.errors;
      observe?.('detailed', all.errors?.length ?? 0);
    }
    const problems = toProblems(errors).map((p) => ({
      ...p,
      field: root && p.field === 'body' ? root : p.field,
    }));
    const listed = problems.length > 0 ? problems : [{ field: root || 'body', message: 'is invalid' }];
    throw invalidRequest(listed, complete ? listed.length : null);
  };
};

/** A body validator: returns the typed body or throws INVALID_REQUEST naming each field. */
export const compileBody = <T>(schema: object, observe?: PassObserver): Validator<T> =>
  compileWith<T>({ fast, detailed }, schema, 'body', observe);
/**
 * A query validator: coerces strings to the schema's types and fills defaults. A numeric parameter
 * whose text is a number too large for a double (`Infinity`, `1e400`) is refused first, naming it:
 * ajv's coercion turns it into ±Infinity, which its integer and range checks let through.
 */
export const compileQuery = <T>(schema: object, observe?: PassObserver): Validator<T> => {
  const validate = compileWith<T>({ fast: fastQuery, detailed: detailedQuery }, schema, 'query', observe);
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const numeric = Object.keys(properties).filter((name) => {
    const type = properties[name]!.type;
    return type === 'integer' || type === 'number';
  });
  return (value: unknown): T => {
    const query = value as Record<string, unknown>;
    for (const name of numeric) {
      const raw = Object.hasOwn(query, name) ? query[name] : undefined;
      if (typeof raw === 'string' && Math.abs(Number(raw)) === Infinity) {
        throw invalidRequest([{ field: name, message: 'must be a finite number' }]);
      }
    }
    return validate(value);
  };
};
