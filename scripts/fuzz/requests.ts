/**
 * Request number `index` of a run with seed `seed`: a pure function of the two (and of the run's
 * `--without` tags and the service's ids, setup.ts), so a failing request can be sent again by
 * its seed and index (`--replay`). Drawn with fast-check (`fc.gen()` sampled with a seed derived
 * from both): an operation of the OpenAPI document with a valid body or query built from its
 * schema and then mutated (hostile.ts), or a whole-request attack (unreadable bodies, content
 * types and encodings, long headers and URLs, malformed HTTP written to a raw socket, keys).
 */
import zlib from 'node:zlib';
import fc from 'fast-check';
import { MAX_BODY_BYTES, ref, resolveRefs, serialise, setOwn, type Refs } from './body.ts';
import {
  deepValue,
  fromPool,
  hostileValue,
  hugeArray,
  isSplice,
  ODD_DATES,
  ODD_NUMBERS,
  ODD_STRINGS,
  POLLUTION_MARKER,
  PROTO_KEYS,
  PROTO_VALUES,
  type Pool,
  type Tagged,
} from './hostile.ts';
import type { Operation } from './operations.ts';
import { valueOf, type Hints, type Schema } from './schemaValues.ts';

/** A Host header value no answer may repeat (a link built from the Host header). */
export const HOST_MARKER = 'fuzz-evil.example';

export type KeyName = 'sandbox' | 'redeem' | 'production';

export interface FuzzRequest {
  index: number;
  /** The operationId, or what else was targeted (`raw`, `route`, `dashboard`). */
  target: string;
  method: string;
  /** Path and query as sent. */
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  /** A whole HTTP/1.1 request written to a socket as is (instead of method, path, headers, body). */
  raw?: Buffer;
  /** Every hostile thing in the request, `family/variant`. */
  tags: string[];
}

export interface GenerateContext {
  seed: number;
  operations: Operation[];
  /** Ids and codes of the service under test: voucher, code, application, export; and the keys. */
  refs: Refs;
  keys: Record<KeyName, string>;
  /** Whether a tag may be used (`--without`). */
  allowed: (tag: string) => boolean;
}

/** A 32-bit seed for request `index` of run `seed`. */
const requestSeed = (seed: number, index: number): number =>
  (Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) + Math.imul(index + 1, 0x85ebca6b)) | 0;

type Gen = <T>(arbitrary: fc.Arbitrary<T>) => T;

const percent = (bytes: Buffer): string =>
  [...bytes].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** encodeURIComponent, but lone surrogates (which it refuses) become the bytes of their WTF-8 form. */
export const encodeLoose = (text: string): string => {
  try {
    return encodeURIComponent(text);
  } catch {
    let out = '';
    for (const ch of text) {
      const code = ch.codePointAt(0)!;
      if (code >= 0xd800 && code <= 0xdfff)
        out += percent(Buffer.from([0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]));
      else out += encodeURIComponent(ch);
    }
    return out;
  }
};

/** A hostile value as a query string or path value: strings as they are, others as their JSON. */
const asText = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (isSplice(value)) return value.splice === 'raw' ? value.text : serialise(value).slice(0, 200_000);
  return JSON.stringify(value) ?? 'undefined';
};

// ---- paths into JSON values -------------------------------------------------------------------

type Path = Array<string | number>;

/** Every node of a value (the root included), at most 200. */
const nodePaths = (value: unknown, path: Path = [], out: Path[] = []): Path[] => {
  if (out.length >= 200) return out;
  out.push(path);
  if (Array.isArray(value)) value.forEach((v, i) => nodePaths(v, [...path, i], out));
  else if (value && typeof value === 'object' && !isSplice(value))
    for (const [k, v] of Object.entries(value)) nodePaths(v, [...path, k], out);
  return out;
};

/** Member paths a schema describes (to depth 4), array elements as index 0. */
const schemaPaths = (schema: Schema, path: Path = [], depth = 0, out: Path[] = []): Path[] => {
  if (depth > 4) return out;
  const props = schema.properties as Record<string, Schema> | undefined;
  for (const [name, member] of Object.entries(props ?? {})) {
    out.push([...path, name]);
    schemaPaths(member, [...path, name], depth + 1, out);
  }
  if (schema.type === 'array' && schema.items) {
    out.push([...path, 0]);
    schemaPaths(schema.items as Schema, [...path, 0], depth + 1, out);
  }
  for (const branch of (schema.allOf as Array<{ then?: Schema }> | undefined) ?? [])
    if (branch.then) schemaPaths(branch.then, path, depth, out);
  for (const alternative of (schema.anyOf as Schema[] | undefined) ?? []) schemaPaths(alternative, path, depth, out);
  return out;
};

/**
 * `root` with (a copy of) `value` at `path` (parents made as needed); the value itself when path
 * is []. A copy: hostile values are shared constants, and later mutations change what they land in.
 */
const setAt = (root: unknown, path: Path, value: unknown): unknown => put(root, path, structuredClone(value));

const put = (root: unknown, path: Path, value: unknown): unknown => {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  const container: Record<string | number, unknown> =
    root && typeof root === 'object' && !isSplice(root)
      ? (root as Record<string, unknown>)
      : typeof head === 'number'
        ? ([] as unknown as Record<number, unknown>)
        : {};
  const next = put(container[head!], rest, value);
  if (typeof head === 'string') setOwn(container as Record<string, unknown>, head, next);
  else container[head!] = next;
  return container;
};

const deleteAt = (root: unknown, path: Path): void => {
  if (path.length === 0) return;
  let node = root as Record<string | number, unknown> | undefined;
  for (const step of path.slice(0, -1)) node = node?.[step] as Record<string | number, unknown> | undefined;
  if (node && typeof node === 'object') delete node[path[path.length - 1]!];
};

const getAt = (root: unknown, path: Path): unknown =>
  path.reduce<unknown>(
    (node, step) => (node && typeof node === 'object' ? (node as Record<string | number, unknown>)[step] : undefined),
    root,
  );

// ---- the generator ---------------------------------------------------------------------------

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];

/** Arbitraries are built once (fast-check's stringMatching costs far more to build than to draw from). */
const arbitraries = new Map<string, fc.Arbitrary<unknown>>();
const cached = <T>(key: string, build: () => fc.Arbitrary<T>): fc.Arbitrary<T> => {
  let arbitrary = arbitraries.get(key);
  if (!arbitrary) arbitraries.set(key, (arbitrary = build()));
  return arbitrary as fc.Arbitrary<T>;
};

/** Arbitraries that depend on the run's `--without` filter, built once per filter. */
const filtered = new WeakMap<(tag: string) => boolean, Map<string, fc.Arbitrary<unknown>>>();
const cachedFor = <T>(
  allowed: (tag: string) => boolean,
  key: string,
  build: () => fc.Arbitrary<T>,
): fc.Arbitrary<T> => {
  let map = filtered.get(allowed);
  if (!map) filtered.set(allowed, (map = new Map()));
  let arbitrary = map.get(key);
  if (!arbitrary) map.set(key, (arbitrary = build()));
  return arbitrary as fc.Arbitrary<T>;
};

/** Hints: members whose valid values are the service's own (so requests reach deep code). */
const hintsFor = (operation: Operation): Hints => {
  const some = (kind: string) => fc.nat(20).map((n) => ref(kind, n));
  const hints: Hints = {};
  if (operation.id === 'validateVoucher' || operation.id === 'applyVoucher') {
    hints.code = fc.oneof(
      { weight: 4, arbitrary: some('code') },
      { weight: 1, arbitrary: fc.stringMatching(/^[A-Z0-9]{1,12}$/) },
    );
    hints.order_id = fc.nat(30).map((n) => `order-${n}`);
    hints.id = fc.oneof(
      fc.nat(30).map((n) => `order-${n}`),
      fc.stringMatching(/^[a-z0-9]{1,8}$/),
    );
    hints.segment = fc.constantFrom('vip', 'new', 'regular');
  }
  if (operation.id === 'createExport') {
    hints.voucher_ids = fc.array(some('voucher'), { minLength: 1, maxLength: 4 });
    hints.start = fc.constantFrom('2026-01-01', '2026-01-01T00:00:00Z');
    hints.end = fc.constantFrom('2026-01-20', '2026-01-31T00:00:00Z');
  }
  if (operation.id === 'createVoucher') hints.code = fc.stringMatching(/^F[A-Z0-9]{4,10}$/);
  // A URL the service may call back (a webhook's): an IP literal on the loopback, so no name is
  // looked up and nothing leaves the machine; port 9 (discard) refuses the connection.
  hints.url = fc.constantFrom('http://127.0.0.1:9/fuzz', 'https://127.0.0.1:9/fuzz', 'http://[::1]:9/fuzz');
  // a webhook's event types: every one ("*"), which is what the schema cannot say
  hints.events = fc.constant(['*']);
  return hints;
};

const DATE_PARAMS = new Set(['start_date', 'end_date']);

/** The JSON type a schema (or the first typed alternative of an anyOf) asks for. */
const typeOf = (schema: Schema | undefined): string | undefined => {
  if (!schema) return undefined;
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) return schema.type[0] as string;
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  return alternatives?.map(typeOf).find((t) => t !== undefined && t !== 'null');
};

const isDateMember = (name: string, schema: Schema | undefined): boolean =>
  schema?.format === 'date-time' ||
  ((schema?.anyOf ?? []) as Schema[]).some((s) => s.format === 'date-time') ||
  DATE_PARAMS.has(name) ||
  /(_after|_before|_from|_until|_date|^start|^end)$/.test(name);

/**
 * A hostile value for a member: mostly one of its own kind (odd numbers where a number goes, odd
 * dates where a timestamp or date goes, odd strings where a string goes), else any.
 */
const hostileFor = (gen: Gen, ctx: GenerateContext, name: string, schema: Schema | undefined): Tagged<unknown> => {
  const type = typeOf(schema);
  const pool: Pool<unknown> = isDateMember(name, schema)
    ? ODD_DATES
    : type === 'integer' || type === 'number'
      ? ODD_NUMBERS
      : type === 'string'
        ? ODD_STRINGS
        : [];
  const kind = pool === ODD_DATES ? 'dates' : pool === ODD_NUMBERS ? 'numbers' : 'strings';
  const usable = pool.filter((h) => ctx.allowed(h.tag));
  if (usable.length > 0 && gen(fc.nat(3)) > 0) return gen(cachedFor(ctx.allowed, kind, () => fromPool(usable)));
  return gen(hostileValue(ctx.allowed));
};

/** A valid value of a query parameter, as text. */
const queryValue = (operation: Operation, name: string, schema: Schema): fc.Arbitrary<string> =>
  cached(`query:${operation.id}:${name}`, () =>
    DATE_PARAMS.has(name)
      ? fc.constantFrom('2026-01-01', '2026-02-15', '2026-01-01T12:00:00Z')
      : valueOf(schema).map((v) => (Array.isArray(v) ? v.join(',') : String(v))),
  );

/** Mutates a JSON body in place (or replaces it): 0 to 3 hostile changes, their tags added. */
const mutateBody = (gen: Gen, ctx: GenerateContext, schema: Schema, value: unknown, tags: string[]): unknown => {
  let body = value;
  const count = gen(fc.constantFrom(0, 1, 1, 1, 2, 3));
  for (let i = 0; i < count; i += 1) {
    // every member the schema or the body has, each as likely (the body's array elements past the first left out)
    const candidates = new Map<string, Path>();
    for (const p of [...schemaPaths(schema), ...nodePaths(body)])
      if (!p.some((step) => typeof step === 'number' && step > 0)) candidates.set(JSON.stringify(p), p);
    const path = gen(fc.constantFrom(...candidates.values()));
    const kind = gen(
      fc.constantFrom('replace', 'replace', 'replace', 'replace', 'proto', 'drop', 'extra', 'huge-array', 'deep'),
    );
    if (kind === 'replace') {
      const name = String([...path].reverse().find((step) => typeof step === 'string') ?? '');
      const hostile = hostileFor(gen, ctx, name, schemaAt(schema, path));
      tags.push(hostile.tag);
      body = setAt(body, path, hostile.value);
    } else if (kind === 'proto' && ctx.allowed('proto-key/member')) {
      const parent = getAt(body, path);
      const target = parent && typeof parent === 'object' && !Array.isArray(parent) && !isSplice(parent) ? path : [];
      const key = gen(fc.constantFrom(...PROTO_KEYS));
      const member = structuredClone(gen(fc.constantFrom(...PROTO_VALUES)));
      tags.push('proto-key/member');
      const node = getAt(body, target);
      if (node && typeof node === 'object' && !Array.isArray(node))
        setOwn(node as Record<string, unknown>, key, member);
      else body = setAt(body, target, Object.defineProperty({}, key, { value: member, enumerable: true }));
    } else if (kind === 'drop' && path.length > 0 && ctx.allowed('shape/missing')) {
      tags.push('shape/missing');
      deleteAt(body, path);
    } else if (kind === 'extra' && ctx.allowed('shape/unknown-member')) {
      tags.push('shape/unknown-member');
      const long = ctx.allowed('long-string/member-name') && gen(fc.nat(5)) === 0;
      if (long) tags.push('long-string/member-name');
      const name = long
        ? 'n'.repeat(gen(fc.constantFrom(101, 4_096, 300_000)))
        : gen(fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('id', 'created_at', 'type', 'code', '')));
      body = setAt(
        body,
        [...path.filter((step) => typeof step === 'string'), name],
        gen(fc.jsonValue({ maxDepth: 2 })),
      );
    } else if (kind === 'huge-array' && ctx.allowed('huge-array')) {
      // arrays the schema has (items, product_ids, voucher_ids, tiers, ...) first
      const arrays = schemaPaths(schema).filter((p) => p[p.length - 1] !== 0 && schemaAt(schema, p)?.type === 'array');
      const target = arrays.length > 0 ? gen(fc.constantFrom(...arrays)) : path;
      const huge = gen(hugeArray());
      tags.push(huge.tag);
      body = setAt(body, target, huge.value);
    } else if (kind === 'deep' && ctx.allowed('deep-nesting')) {
      const deep = gen(deepValue());
      tags.push(deep.tag);
      body = setAt(body, path, deep.value);
    }
  }
  return body;
};

/** The schema of the member at `path` (array elements: index 0), if the schema names it. */
const schemaAt = (schema: Schema, path: Path): Schema | undefined => {
  let node: Schema | undefined = schema;
  for (const step of path) {
    if (!node) return undefined;
    if (typeof step === 'number') node = node.items as Schema | undefined;
    else {
      const direct = (node.properties as Record<string, Schema> | undefined)?.[step];
      const fromBranch = ((node.allOf as Array<{ then?: Schema }> | undefined) ?? [])
        .map((b) => (b.then?.properties as Record<string, Schema> | undefined)?.[step])
        .find(Boolean);
      node = direct ?? fromBranch;
    }
  }
  return node;
};

/** The ids setup.ts makes, by path parameter; other parameters get ids of their pattern (unknown ones). */
const REF_KINDS: Record<string, string> = { voucher_id: 'voucher', application_id: 'application', export_id: 'export' };

/** An id of the parameter's own shape: one the service made, else one of its pattern. */
const validId = (gen: Gen, param: { name: string; pattern?: string }): string => {
  const kind = REF_KINDS[param.name];
  if (kind) return ref(kind, gen(fc.nat(20)));
  const pattern = param.pattern ?? '^[A-Za-z0-9_]{1,24}$';
  return gen(cached(`pattern:${pattern}`, () => fc.stringMatching(new RegExp(pattern)))).slice(0, 300);
};

const pathValue = (gen: Gen, ctx: GenerateContext, param: { name: string; pattern?: string }, tags: string[]) => {
  const choice = gen(fc.constantFrom('ref', 'ref', 'ref', 'ref', 'ref', 'ref', 'pattern', 'hostile', 'hostile', 'odd'));
  if (choice === 'ref') return validId(gen, param);
  if (choice === 'pattern' && param.pattern)
    return gen(cached(`pattern:${param.pattern}`, () => fc.stringMatching(new RegExp(param.pattern!)))).slice(0, 300);
  if (choice === 'odd' && ctx.allowed('path/encoding')) {
    tags.push('path/encoding');
    return gen(
      fc.constantFrom('%', '%zz', '%00', '%2F', '..', '%2e%2e', '%C0%AE', '%ED%A0%80', '%FF', 'v_%0A', ';', '?x'),
    );
  }
  const hostile = gen(hostileValue(ctx.allowed).filter((h) => !isSplice(h.value) || h.value.splice === 'raw'));
  tags.push(hostile.tag);
  return encodeLoose(asText(hostile.value).slice(0, 100_000));
};

const queryString = (gen: Gen, ctx: GenerateContext, operation: Operation, tags: string[], mutate = true): string => {
  const pairs: Array<[string, string]> = [];
  for (const [name, schema] of Object.entries(operation.query))
    if (gen(fc.boolean())) pairs.push([name, gen(queryValue(operation, name, schema))]);
  // an operation that takes no query gets one less often: most of its requests should reach its handler
  const mutations = !mutate
    ? 0
    : gen(Object.keys(operation.query).length > 0 ? fc.constantFrom(0, 1, 1, 2, 2) : fc.constantFrom(0, 0, 0, 1, 2));
  const names = Object.keys(operation.query);
  for (let i = 0; i < mutations; i += 1) {
    const kind = gen(fc.constantFrom('value', 'value', 'value', 'repeat', 'bracket', 'proto', 'unknown'));
    const name = names.length > 0 ? gen(fc.constantFrom(...names)) : 'limit';
    if (kind === 'value') {
      const hostile = hostileFor(gen, ctx, name, operation.query[name]);
      tags.push(hostile.tag);
      pairs.push([name, asText(hostile.value).slice(0, 100_000)]);
    } else if (kind === 'repeat' && ctx.allowed('query/repeat')) {
      tags.push('query/repeat');
      pairs.push([name, '1'], [name, '2']);
    } else if (kind === 'bracket' && ctx.allowed('query/bracket')) {
      tags.push('query/bracket');
      pairs.push([`${name}[a]`, '1'], [`${name}[]`, '2']);
    } else if (kind === 'proto' && ctx.allowed('proto-key/query')) {
      tags.push('proto-key/query');
      const key = gen(fc.constantFrom(...PROTO_KEYS));
      pairs.push(
        gen(
          fc.constantFrom<[string, string]>(
            [key, '1'],
            [`${key}[${POLLUTION_MARKER}]`, '1'],
            [`constructor[prototype][${POLLUTION_MARKER}]`, '1'],
          ),
        ),
      );
    } else if (kind === 'unknown' && ctx.allowed('query/unknown')) {
      tags.push('query/unknown');
      const long = ctx.allowed('long-string/member-name') && gen(fc.nat(5)) === 0;
      if (long) tags.push('long-string/member-name');
      pairs.push([
        long ? 'p'.repeat(gen(fc.constantFrom(101, 4_000, 12_000))) : gen(fc.string({ maxLength: 10 })),
        gen(fc.string({ maxLength: 10 })),
      ]);
    }
  }
  return pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${encodeLoose(k)}=${encodeLoose(v)}`).join('&')}`;
};

const authHeader = (gen: Gen, ctx: GenerateContext, tags: string[]): string | undefined => {
  const choice = gen(
    fc.constantFrom<KeyName | 'odd'>(
      ...(Array(15).fill('sandbox') as KeyName[]),
      'redeem',
      'redeem',
      'redeem',
      'production',
      'odd',
      'odd',
    ),
  );
  if (choice !== 'odd') {
    if (choice !== 'sandbox') tags.push(`key/${choice}`);
    return `Bearer ${ctx.keys[choice]}`;
  }
  if (!ctx.allowed('auth/odd')) return `Bearer ${ctx.keys.sandbox}`;
  tags.push('auth/odd');
  return gen(
    fc.constantFrom(
      undefined,
      '',
      'Bearer',
      'Bearer ',
      `bearer ${ctx.keys.sandbox}`,
      `Bearer  ${ctx.keys.sandbox}  `,
      `Bearer ${ctx.keys.sandbox} extra`,
      `Basic ${Buffer.from(`${ctx.keys.sandbox}:`).toString('base64')}`,
      `Bearer sk_test_${'A'.repeat(32)}`,
      `Bearer sk_live_${'0'.repeat(128)}`,
      `Bearer sk_test_${'x'.repeat(8_000)}`,
      `Bearer ${ctx.keys.sandbox.slice(0, -1)}`,
      `Bearer ${Buffer.from('sk_test_é😀').toString('latin1')}`,
    ),
  );
};

let bomb: Buffer | undefined;
/** 64 MB of JSON that gzip makes about 64 KB of: the inflated size must be what counts. Made once. */
const gzipBomb = (): Buffer =>
  (bomb ??= zlib.gzipSync(
    Buffer.concat([Buffer.from('{"a":"'), Buffer.alloc(64 * 1024 * 1024, 0x20), Buffer.from('"}')]),
    { level: 9 },
  ));

/** A valid body of the operation, mutated; or a whole-body attack. */
const bodyOf = (
  gen: Gen,
  ctx: GenerateContext,
  operation: Operation,
  tags: string[],
  headers: Record<string, string | string[]>,
): Buffer | undefined => {
  const schema = operation.body!;
  const valid = gen(cached(`body:${operation.id}`, () => valueOf(schema, hintsFor(operation))));
  const wholeBody = gen(fc.nat(9)) === 0;
  if (!wholeBody) {
    if (!operation.bodyRequired && gen(fc.nat(4)) === 0) return undefined;
    const mutated = mutateBody(gen, ctx, schema, valid, tags);
    const text = resolveRefs(serialise(mutated), ctx.refs);
    // a deep body with an Idempotency-Key: the key's fingerprint walks the whole body
    if (operation.idempotent && gen(fc.nat(2)) === 0) {
      const deep = tags.some((t) => t.startsWith('deep-nesting'));
      if (!deep || ctx.allowed('deep-nesting/idempotency-key')) {
        headers['Idempotency-Key'] = `fuzz-${ctx.seed}-${gen(fc.nat(50))}`;
        if (deep && !tags.includes('deep-nesting/idempotency-key')) tags.push('deep-nesting/idempotency-key');
      }
    }
    return Buffer.from(text, 'utf8');
  }
  const validText = resolveRefs(serialise(valid), ctx.refs);
  const attacks: Array<Tagged<() => Buffer>> = [
    {
      tag: 'bad-json/truncated',
      value: () => Buffer.from(validText.slice(0, gen(fc.nat(Math.max(0, validText.length - 1))))),
    },
    {
      tag: 'bad-json/garbage',
      value: () =>
        Buffer.from(
          gen(
            fc.constantFrom(
              "{'code': 1}",
              '{"a":1,}',
              '{"a" 1}',
              '{"a":NaN}',
              '{"a":Infinity}',
              '{"a":0x10}',
              '{"a":01}',
              '{"a":"\\x41"}',
              '{"a":"\\u12"}',
              '{a:1}',
              '{"a":1}{"b":2}',
              '{"a":undefined}',
              '\u0000{}',
              '{"a":"\u0000"}',
              '{"a":"line\nbreak"}',
              '{/*c*/}',
              '{"code":"\\ud800","order":{"value":1}}',
            ),
          ),
        ),
    },
    {
      tag: 'bad-json/non-object',
      value: () => Buffer.from(gen(fc.constantFrom('null', '"x"', '123', 'true', '[]', '[{}]', '[null]', '-0'))),
    },
    {
      tag: 'bad-json/duplicate-keys',
      value: () => Buffer.from(validText.replace(/^\{/, '{"code":{"x":1},"order":[],')),
    },
    { tag: 'bad-json/bom', value: () => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(validText)]) },
    {
      tag: 'bad-json/invalid-utf8',
      value: () =>
        Buffer.concat([
          Buffer.from(validText.slice(0, 1)),
          Buffer.from('"x":"'),
          Buffer.from(
            gen(
              fc.constantFrom([0xc0, 0x80], [0xff, 0xfe], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]),
            ),
          ),
          Buffer.from('",'),
          Buffer.from(validText.slice(1)),
        ]),
    },
    { tag: 'bad-json/empty', value: () => Buffer.from(gen(fc.constantFrom('', ' ', '\r\n', '\t\t'))) },
    {
      tag: 'bad-json/whitespace',
      value: () => Buffer.from(' '.repeat(MAX_BODY_BYTES - validText.length - 1) + validText),
    },
    {
      tag: 'bad-json/over-limit',
      value: () => Buffer.from(`{"pad":"${'x'.repeat(MAX_BODY_BYTES)}"}`),
    },
    {
      tag: 'content-type/other',
      value: () => {
        headers['Content-Type'] = gen(
          fc.constantFrom(
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'application/jsonp',
            'application/merge-patch+json',
            'application/json-seq',
            '*/*',
            'application/',
            ';',
            'application/json; charset=latin1',
            'application/json; charset=utf-16',
            'application/json; charset="UTF-8"',
            'application/json; charset=utf-8; charset=ascii',
            'APPLICATION/JSON',
            'application/json ; x=' + 'y'.repeat(2_000),
          ),
        );
        return Buffer.from(
          headers['Content-Type'] === 'application/x-www-form-urlencoded'
            ? 'code=X&order[value]=1&__proto__[a]=1'
            : validText,
        );
      },
    },
    {
      tag: 'content-type/missing',
      value: () => {
        delete headers['Content-Type'];
        return Buffer.from(validText);
      },
    },
    {
      tag: 'content-type/utf16',
      value: () => {
        headers['Content-Type'] = 'application/json; charset=utf-16le';
        return Buffer.from(validText, 'utf16le');
      },
    },
    {
      tag: 'content-encoding/valid',
      value: () => {
        const encoding = gen(fc.constantFrom('gzip', 'deflate', 'br'));
        headers['Content-Encoding'] = encoding;
        const plain = Buffer.from(validText);
        return encoding === 'gzip'
          ? zlib.gzipSync(plain)
          : encoding === 'deflate'
            ? zlib.deflateSync(plain)
            : zlib.brotliCompressSync(plain);
      },
    },
    {
      tag: 'content-encoding/bomb',
      value: () => {
        headers['Content-Encoding'] = 'gzip';
        return gzipBomb();
      },
    },
    {
      tag: 'content-encoding/invalid',
      value: () => {
        headers['Content-Encoding'] = gen(
          fc.constantFrom('gzip', 'deflate', 'br', 'x-unknown', 'gzip, gzip', 'identity, gzip', 'compress'),
        );
        return Buffer.from(validText);
      },
    },
  ];
  const usable = attacks.filter((a) => ctx.allowed(a.tag));
  if (usable.length === 0) return Buffer.from(validText);
  const attack = gen(fc.constantFrom(...usable));
  tags.push(attack.tag);
  return attack.value();
};

/** An HTTP/1.1 request with the service's key, written to a socket as is. */
const rawRequest = (gen: Gen, ctx: GenerateContext, tags: string[]): Buffer => {
  const auth = `Authorization: Bearer ${ctx.keys.sandbox}\r\n`;
  const json = '{"code":"X","order":{"value":100}}';
  const attacks: Array<Tagged<string | Buffer>> = [
    {
      tag: 'raw/smuggling',
      value: `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET /v1/vouchers HTTP/1.1\r\nHost: h\r\n\r\n`,
    },
    {
      tag: 'raw/bad-chunk',
      value: `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n${json}\r\n0\r\n\r\n`,
    },
    {
      tag: 'raw/chunked',
      value: `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${json.length.toString(16)}\r\n${json}\r\n0\r\n\r\n`,
    },
    {
      tag: 'raw/content-length',
      value: gen(
        fc.constantFrom(
          `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 40\r\nConnection: close\r\n\r\n${json}`,
          `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: -1\r\nConnection: close\r\n\r\n${json}`,
          `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999999999999999\r\nConnection: close\r\n\r\n${json}`,
          `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: 1e3\r\nConnection: close\r\n\r\n${json}`,
          `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: ${json.length - 5}\r\nConnection: close\r\n\r\n${json}`,
        ),
      ),
    },
    {
      tag: 'raw/request-line',
      value: gen(
        fc.constantFrom(
          'GET /v1/vouchers\u0000 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          'get /v1/vouchers HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          'FUZZ /v1/vouchers HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          'TRACE /v1/vouchers HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          'OPTIONS * HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          `GET http://${HOST_MARKER}/v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}Connection: close\r\n\r\n`,
          'GET /v1/vouchers HTTP/1.0\r\n\r\n',
          'GET /v1/vouchers HTTP/9.9\r\nHost: h\r\nConnection: close\r\n\r\n',
          'GET /\r\n\r\n',
          'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
          'GET  /v1/vouchers  HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          'GET /v1/vouchers?\u00ff\u00fe HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
          `GET /v1/vouchers/v_${'\u00e9'.repeat(20)} HTTP/1.1\r\nHost: h\r\n${auth}Connection: close\r\n\r\n`,
          `GET /${'a/'.repeat(40_000)} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n`,
        ),
      ),
    },
    {
      tag: 'raw/headers',
      value: gen(
        fc.constantFrom(
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer\r\n ${ctx.keys.sandbox}\r\nConnection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}X-A: a\u0000b\r\nConnection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}X-A: a\rb\r\nConnection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}X A: b\r\nConnection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}: empty\r\nConnection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\nHost: h\n${auth.replace('\r\n', '\n')}Connection: close\n\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\nHost: ${HOST_MARKER}\r\n${auth}Connection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}Authorization: Bearer sk_test_${'B'.repeat(32)}\r\nConnection: close\r\n\r\n`,
          `GET /v1/vouchers HTTP/1.1\r\nHost: h\r\n${auth}X-É: \u00ff\r\nConnection: close\r\n\r\n`,
        ),
      ),
    },
    {
      tag: 'raw/expect',
      value: `POST /v1/vouchers/validate HTTP/1.1\r\nHost: h\r\n${auth}Content-Type: application/json\r\nContent-Length: ${json.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n${json}`,
    },
    {
      tag: 'raw/pipelined',
      value: `${`GET /v1/vouchers?limit=1 HTTP/1.1\r\nHost: h\r\n${auth}\r\n`.repeat(50)}GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n`,
    },
  ];
  const usable = attacks.filter((a) => ctx.allowed(a.tag));
  const attack = usable.length > 0 ? gen(fc.constantFrom(...usable)) : attacks[2]!;
  tags.push(attack.tag);
  return typeof attack.value === 'string' ? Buffer.from(attack.value, 'latin1') : attack.value;
};

/** Request number `index` of the run. */
export const generate = (index: number, ctx: GenerateContext): FuzzRequest => {
  const [g] = fc.sample(fc.gen(), { seed: requestSeed(ctx.seed, index), numRuns: 1 });
  const gen: Gen = (arbitrary) => g!(() => arbitrary);
  const tags: string[] = [];
  const headers: Record<string, string | string[]> = {};
  const kind = gen(
    fc.constantFrom(
      ...(Array(14).fill('operation') as string[]),
      'operation-headers',
      'operation-headers',
      'url',
      'raw',
      'route',
      'dashboard',
    ),
  );
  const usable = (tag: string) => ctx.allowed(tag);

  if (kind === 'raw' && usable('raw')) {
    return { index, target: 'raw', method: 'RAW', path: '', headers, raw: rawRequest(gen, ctx, tags), tags };
  }
  if (kind === 'route' && usable('route')) {
    tags.push('route');
    const method = gen(fc.constantFrom(...HTTP_METHODS));
    const path = gen(
      fc.constantFrom(
        '/health',
        '/v1/openapi.json',
        '/v1',
        '/v1/',
        '/v1/vouchers/',
        '//v1//vouchers',
        '/v1/VOUCHERS',
        '/v1/vouchers/validate/',
        '/v1/vouchers/applications',
        '/v1/analytics',
        '/v1/analytics/export/',
        '/v1/vouchers/%2e%2e/%2e%2e/package.json',
        '/v1/__proto__',
        '/v1/constructor/prototype',
        '/favicon.ico',
        '/.env',
      ),
    );
    headers.Authorization = `Bearer ${ctx.keys.sandbox}`;
    return { index, target: 'route', method, path, headers, tags };
  }
  if (kind === 'dashboard' && usable('dashboard')) {
    tags.push('dashboard');
    const [method, path] = gen(
      fc.constantFrom(
        ['GET', '/dashboard'],
        ['GET', '/dashboard/login'],
        ['GET', '/dashboard/login?signed_out=1&__proto__=1'],
        ['POST', '/dashboard/login'],
        ['GET', '/dashboard/keys'],
        ['POST', '/dashboard/keys'],
        ['POST', '/dashboard/keys/key_x/revoke'],
        ['GET', '/dashboard/keys/%E0%A4%A/revoke'],
        ['POST', '/dashboard/logout'],
        ['GET', '/dashboard/assets/..%2f..%2f..%2fpackage.json'],
        ['GET', '/dashboard/assets/dashboard.css'],
      ),
    );
    if (method === 'POST') {
      headers['Content-Type'] = gen(
        fc.constantFrom('application/x-www-form-urlencoded', 'application/json', 'text/plain'),
      );
      const body = gen(
        fc.constantFrom(
          'password=x&csrf=y',
          `password=${'p'.repeat(100_000)}`,
          '__proto__[admin]=1&constructor[prototype][x]=1',
          'password=%FF%FE&csrf=%00',
          '{"password":"x"}',
          '',
        ),
      );
      headers.Cookie = gen(fc.constantFrom('', 'session=x', `csrf=${'c'.repeat(5_000)}`, 'a=%E0%A4%A; b'));
      return { index, target: 'dashboard', method, path, headers, body: Buffer.from(body), tags };
    }
    return { index, target: 'dashboard', method, path, headers, tags };
  }

  const operation = gen(fc.constantFrom(...ctx.operations));
  // A quarter of the operations' requests are valid (real ids, the sandbox key, a query and body
  // from the schemas): the handlers' own paths, where a fault shows when nothing else is wrong.
  if (kind === 'operation' && gen(fc.nat(3)) === 0) {
    tags.push('valid');
    const validPath = operation.template.replace(/\{(\w+)\}/g, (_, name: string) =>
      validId(gen, operation.pathParams.find((p) => p.name === name) ?? { name }),
    );
    headers.Authorization = `Bearer ${ctx.keys.sandbox}`;
    let validBody: Buffer | undefined;
    if (operation.body) {
      headers['Content-Type'] = 'application/json';
      const value = gen(cached(`body:${operation.id}`, () => valueOf(operation.body!, hintsFor(operation))));
      validBody = Buffer.from(resolveRefs(serialise(value), ctx.refs));
      if (operation.idempotent && gen(fc.boolean())) headers['Idempotency-Key'] = `fuzz-${ctx.seed}-${gen(fc.nat(50))}`;
    }
    const query = queryString(gen, ctx, operation, tags, false);
    return {
      index,
      target: operation.id,
      method: operation.method,
      path: resolveRefs(validPath + query, ctx.refs),
      headers,
      body: validBody,
      tags,
    };
  }
  let path = operation.template.replace(/\{(\w+)\}/g, (_, name: string) =>
    pathValue(gen, ctx, operation.pathParams.find((p) => p.name === name) ?? { name }, tags),
  );
  path += queryString(gen, ctx, operation, tags);
  const auth = authHeader(gen, ctx, tags);
  if (auth !== undefined) headers.Authorization = auth;
  let body: Buffer | undefined;
  if (operation.body) {
    headers['Content-Type'] = 'application/json';
    body = bodyOf(gen, ctx, operation, tags, headers);
  } else if (gen(fc.nat(9)) === 0 && usable('body/unexpected')) {
    // a body where none is taken
    tags.push('body/unexpected');
    headers['Content-Type'] = 'application/json';
    body = Buffer.from(gen(fc.constantFrom('{}', '{"a":1}', '[', 'x'.repeat(10_000))));
  }

  if (kind === 'url' && usable('long-url')) {
    tags.push('long-url');
    const length = gen(fc.constantFrom(2_000, 8_000, 15_000, 16_500, 100_000));
    path += `${path.includes('?') ? '&' : '?'}pad=${'x'.repeat(length)}`;
  }
  /** A deep body with an Idempotency-Key only when that pair is allowed (its fingerprint walks the whole body). */
  const idempotencyKeyAllowed = (): boolean => {
    if (!tags.some((t) => t.startsWith('deep-nesting'))) return true;
    if (!usable('deep-nesting/idempotency-key')) return false;
    tags.push('deep-nesting/idempotency-key');
    return true;
  };
  if (kind === 'operation-headers') {
    const attack = gen(fc.constantFrom('long-header', 'many-headers', 'idempotency-key/odd', 'host'));
    if (attack === 'long-header' && usable('header/long')) {
      tags.push('header/long');
      headers['X-Fuzz-Padding'] = 'h'.repeat(gen(fc.constantFrom(1_000, 8_000, 16_000, 17_000, 64_000, 1_000_000)));
    } else if (attack === 'many-headers' && usable('header/many')) {
      tags.push('header/many');
      const count = gen(fc.constantFrom(100, 500, 2_000));
      for (let i = 0; i < count; i += 1) headers[`X-Fuzz-${i}`] = String(i);
    } else if (attack === 'idempotency-key/odd' && usable('header/idempotency-key') && idempotencyKeyAllowed()) {
      tags.push('header/idempotency-key');
      headers['Idempotency-Key'] = gen(
        fc.constantFrom(
          '',
          ' ',
          'k'.repeat(255),
          'k'.repeat(256),
          'k'.repeat(10_000),
          Buffer.from('clé-😀').toString('latin1'),
          '__proto__',
          'constructor',
        ),
      );
    } else if (attack === 'host' && usable('header/host')) {
      tags.push('header/host');
      headers.Host = HOST_MARKER;
      headers['X-Forwarded-Host'] = HOST_MARKER;
      headers['X-Forwarded-Proto'] = 'gopher';
      headers['X-Forwarded-For'] = gen(fc.constantFrom('1.2.3.4', 'not-an-ip', '127.0.0.1, 10.0.0.1', ''));
    }
  }
  return {
    index,
    target: operation.id,
    method: operation.method,
    path: resolveRefs(path, ctx.refs),
    headers,
    body,
    tags,
  };
};
