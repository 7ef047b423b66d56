/**
 * Pure SQL generation for the SQLite ReadStore: filters (see readStore.ts), sorts and
 * expression indexes over tables `(id TEXT PRIMARY KEY, doc TEXT NOT NULL)` of JSON docs.
 *
 * Collection names and field paths are written into the SQL text (SQLite only matches an
 * expression index when the JSON path is the same literal in the index and in the query),
 * so both are validated against strict patterns. Values are always bound parameters.
 *
 * Type-awareness follows MongoDB: each condition checks `json_type` as well as the value,
 * so 1 never matches true, '10' never matches $gt 5 and a nested object never equals the
 * string of its JSON. The value test is always `json_extract(doc, '$.path') <op> ?`, the
 * exact expression that ensureIndex indexes.
 */
import type { FieldOperators, Filter, SortSpec } from '../../core/readStore.ts';

const COLLECTION_RE = /^[a-z][a-z0-9_]*$/;
const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const COMPARISONS: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };
const NUMBER_TYPES = `IN ('integer', 'real')`;

export type SqlParam = string | number;
export interface SqlWhere {
  where: string;
  params: SqlParam[];
}

/** Quoted table name for a collection; throws on names that are not `^[a-z][a-z0-9_]*$`. */
export function tableName(collection: string): string {
  if (typeof collection !== 'string' || !COLLECTION_RE.test(collection)) {
    throw new Error(`invalid collection name ${JSON.stringify(collection)}: must match ${COLLECTION_RE}`);
  }
  return `"rm_${collection}"`;
}

export function assertFieldPath(path: string): void {
  if (typeof path !== 'string' || !FIELD_RE.test(path)) {
    throw new Error(`invalid field path ${JSON.stringify(path)}: must match ${FIELD_RE}`);
  }
}

/** SQL expression of a field's value (`id` is the primary-key column). */
export function valueExpr(path: string): string {
  assertFieldPath(path);
  return path === 'id' ? 'id' : `json_extract(doc, '$.${path}')`;
}

/** SQL expression of a field's JSON type ('text', 'integer', 'real', 'true', 'null', ...; NULL when missing). */
function typeExpr(path: string): string {
  return path === 'id' ? `'text'` : `json_type(doc, '$.${path}')`;
}

function describe(value: unknown): string {
  return value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
}

function numberParam(path: string, value: number): number {
  if (!Number.isFinite(value)) throw new Error(`filter on ${path}: ${value} is not a finite number`);
  return value;
}

/** Equality; never evaluates to SQL NULL (so it can be negated safely). */
function equals(path: string, value: unknown, params: SqlParam[]): string {
  const val = valueExpr(path);
  const type = typeExpr(path);
  if (value === null) return `(${val} IS NULL)`; // JSON null or missing
  switch (typeof value) {
    case 'boolean': // json_extract yields 1/0 for true/false; json_type tells them from numbers
      return `(${val} = ${value ? 1 : 0} AND ${type} IS '${value}')`;
    case 'number':
      params.push(numberParam(path, value));
      return `(${val} = ? AND ${type} ${NUMBER_TYPES} IS 1)`;
    case 'string':
      params.push(value);
      return `(${val} = ? AND ${type} IS 'text')`;
    default:
      throw new Error(
        `filter on ${path}: unsupported value ${describe(value)} (expected string, number, boolean or null)`,
      );
  }
}

function compare(path: string, op: string, value: unknown, params: SqlParam[]): string {
  const val = valueExpr(path);
  const type = typeExpr(path);
  if (typeof value === 'number') {
    params.push(numberParam(path, value));
    return `(${val} ${COMPARISONS[op]} ? AND ${type} ${NUMBER_TYPES} IS 1)`;
  }
  if (typeof value === 'string') {
    params.push(value);
    return `(${val} ${COMPARISONS[op]} ? AND ${type} IS 'text')`;
  }
  throw new Error(`filter on ${path}: ${op} needs a string or a number, got ${describe(value)}`);
}

function inList(path: string, values: unknown, params: SqlParam[]): string {
  if (!Array.isArray(values)) throw new Error(`filter on ${path}: $in needs an array, got ${describe(values)}`);
  const val = valueExpr(path);
  const type = typeExpr(path);
  const parts: string[] = [];
  const strings = values.filter((v): v is string => typeof v === 'string');
  const numbers = values.filter((v): v is number => typeof v === 'number').map((n) => numberParam(path, n));
  if (numbers.length > 0) {
    parts.push(`(${val} IN (${numbers.map(() => '?').join(', ')}) AND ${type} ${NUMBER_TYPES} IS 1)`);
    params.push(...numbers);
  }
  if (strings.length > 0) {
    parts.push(`(${val} IN (${strings.map(() => '?').join(', ')}) AND ${type} IS 'text')`);
    params.push(...strings);
  }
  for (const other of new Set(values.filter((v) => typeof v !== 'string' && typeof v !== 'number'))) {
    parts.push(equals(path, other, params)); // null, booleans; throws on anything else
  }
  return parts.length === 0 ? '0' : parts.length === 1 ? parts[0] : `(${parts.join(' OR ')})`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function fieldCondition(path: string, condition: unknown, params: SqlParam[]): string {
  if (!isPlainObject(condition)) return equals(path, condition, params);
  const ops = Object.entries(condition as FieldOperators);
  if (ops.length === 0) throw new Error(`filter on ${path}: empty operator object`);
  const parts = ops.map(([op, value]) => {
    if (value === undefined) throw new Error(`filter on ${path}: ${op} is undefined`);
    if (op === '$eq') return equals(path, value, params);
    if (op === '$ne') return `(${equals(path, value, params)} IS NOT TRUE)`; // missing fields match too
    if (op === '$in') return inList(path, value, params);
    if (op in COMPARISONS) return compare(path, op, value, params);
    throw new Error(`filter on ${path}: unsupported operator ${JSON.stringify(op)}`);
  });
  return parts.length === 1 ? parts[0] : `(${parts.join(' AND ')})`;
}

function compile(filter: unknown, params: SqlParam[]): string {
  if (!isPlainObject(filter)) throw new Error(`a filter must be a plain object, got ${describe(filter)}`);
  const parts: string[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined) throw new Error(`filter on ${key}: value is undefined`);
    if (key === '$or') {
      if (!Array.isArray(value) || value.length === 0) throw new Error('$or needs a non-empty array of filters');
      parts.push(`(${value.map((sub) => compile(sub, params)).join(' OR ')})`);
    } else if (key.startsWith('$')) {
      throw new Error(`unsupported top-level operator ${JSON.stringify(key)}`);
    } else {
      assertFieldPath(key);
      parts.push(fieldCondition(key, value, params));
    }
  }
  return parts.length === 0 ? '1' : parts.length === 1 ? parts[0] : `(${parts.join(' AND ')})`;
}

/** Compiles a filter into a WHERE expression ('1' when empty) and its bound parameters. */
export function compileFilter(filter: Filter = {}): SqlWhere {
  const params: SqlParam[] = [];
  return { where: compile(filter, params), params };
}

/** ORDER BY terms for a sort, ending with `id ASC` unless id is already sorted on. */
export function compileSort(sort: SortSpec = []): string {
  if (!Array.isArray(sort)) throw new Error('sort must be an array of [field, 1 | -1]');
  const terms = sort.map((entry) => {
    const [field, direction] = Array.isArray(entry) ? entry : [];
    if (direction !== 1 && direction !== -1) throw new Error(`sort on ${String(field)}: direction must be 1 or -1`);
    return `${valueExpr(field as string)} ${direction === 1 ? 'ASC' : 'DESC'}`;
  });
  if (!sort.some(([field]) => field === 'id')) terms.push('id ASC');
  return terms.join(', ');
}

/** CREATE INDEX statement over the same expressions the queries use; null when only `id` (the primary key). */
export function indexDdl(collection: string, fields: string[]): string | null {
  const table = tableName(collection);
  if (!Array.isArray(fields) || fields.length === 0) throw new Error('ensureIndex needs at least one field');
  const exprs = fields.map(valueExpr);
  if (fields.length === 1 && fields[0] === 'id') return null;
  return `CREATE INDEX IF NOT EXISTS "ix_rm_${collection}(${fields.join(',')})" ON ${table} (${exprs.join(', ')})`;
}
