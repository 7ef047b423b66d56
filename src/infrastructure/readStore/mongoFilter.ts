/**
 * Filters, sorts and index keys of the ReadStore port (src/core/readStore.ts) as MongoDB
 * documents. The port's filter language is a subset of MongoDB's, so a filter passes through
 * nearly unchanged: every key and value is checked against the subset (anything else, `$where`
 * or `$regex` included, is refused before it reaches the server) and the field `id` becomes
 * `_id`, where the adapter keeps a document's id.
 *
 * Collection names and field paths follow the same patterns as the SQLite store's, so a name
 * valid on one store is valid on the other.
 */
import type { Filter, SortSpec } from '../../core/readStore.ts';

const COLLECTION_RE = /^[a-z][a-z0-9_]*$/;
const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const COMPARISONS = new Set(['$gt', '$gte', '$lt', '$lte']);

export type MongoFilter = Record<string, unknown>;

/** The MongoDB collection of a port collection (`rm_<name>`); throws on names that are not `^[a-z][a-z0-9_]*$`. */
export function collectionName(collection: string): string {
  if (typeof collection !== 'string' || !COLLECTION_RE.test(collection)) {
    throw new Error(`invalid collection name ${JSON.stringify(collection)}: must match ${COLLECTION_RE}`);
  }
  return `rm_${collection}`;
}

/** The stored field of a port field path: `id` is `_id`; throws on paths outside `FIELD_RE`. */
export function fieldName(path: string): string {
  if (typeof path !== 'string' || !FIELD_RE.test(path)) {
    throw new Error(`invalid field path ${JSON.stringify(path)}: must match ${FIELD_RE}`);
  }
  return path === 'id' ? '_id' : path;
}

function describe(value: unknown): string {
  return value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function scalar(path: string, value: unknown): string | number | boolean | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`filter on ${path}: ${value} is not a finite number`);
    return value;
  }
  throw new Error(`filter on ${path}: unsupported value ${describe(value)} (expected string, number, boolean or null)`);
}

function condition(path: string, value: unknown): unknown {
  if (!isPlainObject(value)) return scalar(path, value);
  const ops = Object.entries(value);
  if (ops.length === 0) throw new Error(`filter on ${path}: empty operator object`);
  const out: Record<string, unknown> = {};
  for (const [op, operand] of ops) {
    if (operand === undefined) throw new Error(`filter on ${path}: ${op} is undefined`);
    if (op === '$eq' || op === '$ne') out[op] = scalar(path, operand);
    else if (op === '$in') {
      if (!Array.isArray(operand)) throw new Error(`filter on ${path}: $in needs an array, got ${describe(operand)}`);
      out[op] = operand.map((v) => scalar(path, v));
    } else if (COMPARISONS.has(op)) {
      if (typeof operand !== 'string' && typeof operand !== 'number') {
        throw new Error(`filter on ${path}: ${op} needs a string or a number, got ${describe(operand)}`);
      }
      out[op] = scalar(path, operand);
    } else throw new Error(`filter on ${path}: unsupported operator ${JSON.stringify(op)}`);
  }
  return out;
}

/** The MongoDB filter of a port filter (`{}` when empty); throws on anything outside the port's subset. */
export function mongoFilter(filter: Filter = {}): MongoFilter {
  if (!isPlainObject(filter)) throw new Error(`a filter must be a plain object, got ${describe(filter)}`);
  const out: MongoFilter = {};
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined) throw new Error(`filter on ${key}: value is undefined`);
    if (key === '$or') {
      if (!Array.isArray(value) || value.length === 0) throw new Error('$or needs a non-empty array of filters');
      out.$or = value.map((sub) => mongoFilter(sub as Filter));
    } else if (key.startsWith('$')) {
      throw new Error(`unsupported top-level operator ${JSON.stringify(key)}`);
    } else {
      out[fieldName(key)] = condition(key, value);
    }
  }
  return out;
}

/** The MongoDB sort of a port sort, ending with `_id: 1` unless id is already sorted on (a total order for paging). */
export function mongoSort(sort: SortSpec = []): Array<[string, 1 | -1]> {
  if (!Array.isArray(sort)) throw new Error('sort must be an array of [field, 1 | -1]');
  const terms = sort.map((entry): [string, 1 | -1] => {
    const [field, direction] = Array.isArray(entry) ? entry : [];
    if (direction !== 1 && direction !== -1) throw new Error(`sort on ${String(field)}: direction must be 1 or -1`);
    return [fieldName(field as string), direction];
  });
  if (!terms.some(([field]) => field === '_id')) terms.push(['_id', 1]);
  return terms;
}

/** The index key of ensureIndex's fields, in order; null when only `id` (always indexed as `_id`). */
export function indexKey(fields: string[]): Record<string, 1> | null {
  if (!Array.isArray(fields) || fields.length === 0) throw new Error('ensureIndex needs at least one field');
  const names = fields.map(fieldName);
  if (names.length === 1 && names[0] === '_id') return null;
  return Object.fromEntries(names.map((name) => [name, 1 as const]));
}
