/**
 * The hostile values the fuzzer puts into requests, each under a tag `family/variant` (the report
 * counts requests by tag, and `--without=<tag prefix>` leaves tags out). Values are JSON values,
 * except where a JSON value cannot say it: a number JavaScript cannot hold (9007199254740993,
 * 1e400), a huge array or a deeply nested value are `Splice`s, written into the body's text when
 * it is serialised (body.ts), sized to what is left under the service's body limit.
 */
import fc from 'fast-check';

/** Raw JSON text put where the splice stands in the serialised body. */
export type Splice =
  | { splice: 'raw'; text: string }
  /** `[e,e,...]` with as many elements as fit `fill` (0..1) of the room left, or `count` of them. */
  | { splice: 'array'; element: string; fill?: number; count?: number }
  /** `open` × depth + `leaf` + `close` × depth, as deep as fits `fill` of the room left. */
  | { splice: 'deep'; open: string; close: string; leaf: string; fill: number };

export const isSplice = (value: unknown): value is Splice =>
  typeof value === 'object' && value !== null && 'splice' in value && !Array.isArray(value);

export interface Tagged<T> {
  tag: string;
  value: T;
}

export type Pool<T> = Array<Tagged<T>>;

const of = <T>(tag: string, values: T[]): Pool<T> => values.map((value) => ({ tag, value }));

/** Dates and timestamps the spec's `date-time` format, JavaScript's Date and SQLite disagree on. */
export const ODD_DATES: Pool<string> = [
  ...of('odd-date/leap-second', ['2099-12-31T23:59:60Z', '2026-06-30T23:59:60.5+00:00', '1998-12-31T23:59:60Z']),
  ...of('odd-date/extreme-year', [
    '+275760-09-13T00:00:00.000Z',
    '275760-09-13T00:00:00Z',
    '-271821-04-20T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '10000-01-01T00:00:00Z',
    '0001-01-01T00:00:00+23:59',
  ]),
  ...of('odd-date/invalid', [
    '0000-00-00',
    '0000-00-00T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T25:61:61Z',
    '2026-W01',
    'tomorrow',
    '',
    'T',
    '2026-01-01T00:00:00ZZ',
  ]),
  ...of('odd-date/timezone', [
    '2026-01-01T00:00:00+14:00',
    '2026-01-01T00:00:00-12:00',
    '2026-01-01T00:00:00+23:59',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+0530',
    '2026-01-01T00:00:00 UTC',
    '2026-01-01T00:00:00',
    '2026-01-01t00:00:00z',
  ]),
  ...of('odd-date/date-only', ['2026-11-23', '2026-11', '2026', '20261123']),
  ...of('odd-date/precision', ['2026-01-01T00:00:00.123456789Z', '2026-01-01T00:00:00.9999999999Z']),
  ...of('odd-date/epoch', ['1970-01-01T00:00:00Z', '1969-12-31T23:59:59Z']),
];

/** Numbers at the edges of IEEE 754 and of JSON, and numbers sent as strings. */
export const ODD_NUMBERS: Pool<unknown> = [
  ...of('odd-number/huge', [1e308, -1e308, Number.MAX_VALUE, 1e21]),
  ...of<unknown>('odd-number/unsafe-integer', [
    { splice: 'raw', text: '9007199254740993' },
    2 ** 53,
    -(2 ** 53),
    { splice: 'raw', text: '123456789012345678901234567890' },
  ]),
  ...of<unknown>('odd-number/overflow', [
    { splice: 'raw', text: '1e400' },
    { splice: 'raw', text: '-1e400' },
    { splice: 'raw', text: '1e-400' },
  ]),
  ...of<unknown>('odd-number/negative-zero', [
    { splice: 'raw', text: '-0' },
    { splice: 'raw', text: '-0.0' },
  ]),
  ...of('odd-number/float', [0.1, 1.5, 99.999, 100.001, 0.000001, 1e-7, 12.345]),
  ...of('odd-number/negative', [-1, -100, -2147483648]),
  // as strings, where a query string or a careless parser takes them for numbers
  ...of('odd-number/huge', ['1e308', '-1e308', 'Infinity', '-Infinity']),
  ...of('odd-number/unsafe-integer', ['9007199254740993']),
  ...of('odd-number/string', ['NaN', '-0', '0x10', '1_000', ' 1', '1.0', '01']),
];

/** Strings that are valid JSON but hard on whoever handles them: direction, NUL, surrogates, case folding. */
export const ODD_STRINGS: Pool<string> = [
  ...of('unicode/rtl', ['\u202EOFF50', 'SAVE\u202E01', '\u200F\u061C%', 'مرحبا']),
  ...of('unicode/nul', ['\u0000', 'SAVE\u0000', 'a\u0000b\u0000c']),
  ...of('unicode/lone-surrogate', ['\uD800', '\uDFFF', 'SAVE\uD83D', '\uDC00\uD800']),
  ...of('unicode/emoji', ['🎟️SAVE10', '😀', '👩‍👩‍👧‍👦', '🏳️‍🌈SUMMER']),
  ...of('unicode/case-folding', ['İSTANBUL', 'straße', 'ﬃ', 'ＳＡＶＥ１０', 'ǅ', 'ΣΑΣ']),
  ...of('unicode/invisible', ['\uFEFFSAVE10', 'SAVE\u200B10', '\u00AD', '\u2028\u2029']),
  ...of('unicode/control', ['\u0007\u0008\u001B[31m', 'a\r\nSet-Cookie: x=1', '\t', '\u007F']),
  ...of('unicode/combining', ['Z\u0335\u0321a\u0337\u0338\u0336', 'e\u0301', 'a'.concat('\u0300'.repeat(200))]),
  ...of('proto-key/value', ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf']),
  ...of('injection/sql', ["' OR '1'='1", "'; DROP TABLE events; --", 'a%', '_', '\\']),
  ...of('injection/path', ['../../etc/passwd', '..\\..\\', '%2e%2e%2f', '/dev/zero', 'CON']),
];

/** Property names that reach Object.prototype when code assigns them into a plain object. */
export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];
/** What the fuzzer puts under a prototype key; a response that shows the marker without being sent it is a leak. */
export const POLLUTION_MARKER = 'fuzz_polluted';
export const PROTO_VALUES: unknown[] = [
  { [POLLUTION_MARKER]: true },
  { prototype: { [POLLUTION_MARKER]: true } },
  POLLUTION_MARKER,
  1,
  null,
];

/** Values of the wrong JSON type for wherever they land. */
export const WRONG_TYPES: Pool<unknown> = of('wrong-type', [null, true, false, 0, '', [], {}, [null], { a: 1 }, '1']);

/** Arbitrary strings from the whole of Unicode (surrogates included), and long ones. */
export const randomString = (): fc.Arbitrary<Tagged<string>> =>
  fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }).map((value) => ({ tag: 'unicode/random', value })),
    fc
      .tuple(fc.constantFrom('a', 'é', '😀', '\u0000', ' '), fc.constantFrom(256, 4_096, 65_536, 300_000))
      .map(([unit, count]) => ({ tag: 'long-string', value: unit.repeat(count) })),
  );

/** Elements a huge array is made of: empty, valid-looking, or wrong. */
const ARRAY_ELEMENTS = [
  '{}',
  '1',
  '""',
  'null',
  '"p"',
  '{"id":"a","price":1,"quantity":1}',
  '[]',
  '"@@ref:voucher:0@@"',
];

/**
 * A huge array: just over a cap (1,001, 5,001, 100,001 elements) or as many as fill the body
 * limit (the 340,000 empty objects), or more than fit (413).
 */
export const hugeArray = (): fc.Arbitrary<Tagged<Splice>> =>
  fc
    .tuple(
      fc.constantFrom(...ARRAY_ELEMENTS),
      fc.oneof(
        fc.constantFrom(21, 1_001, 5_001, 100_001).map((count) => ({ count })),
        fc.constantFrom(0.1, 0.5, 1, 1.01).map((fill) => ({ fill })),
      ),
    )
    .map(([element, size]) => ({ tag: 'huge-array', value: { splice: 'array', element, ...size } }));

/** A value nested as deep as fits in part or all of the body limit (up to about 500,000 levels). */
export const deepValue = (): fc.Arbitrary<Tagged<Splice>> =>
  fc
    .tuple(
      fc.constantFrom(
        { open: '[', close: ']', leaf: '' },
        { open: '{"a":', close: '}', leaf: '1' },
        { open: '[{"x":', close: '}]', leaf: 'null' },
      ),
      fc.constantFrom(0.0001, 0.01, 0.5, 1),
    )
    .map(([shape, fill]) => ({ tag: 'deep-nesting', value: { splice: 'deep', ...shape, fill } }));

/** A value of `pool`: first a variant (tag), each as likely, then one of its values. */
export const fromPool = <T>(pool: Pool<T>): fc.Arbitrary<Tagged<T>> => {
  const byTag = new Map<string, Pool<T>>();
  for (const entry of pool) byTag.set(entry.tag, [...(byTag.get(entry.tag) ?? []), entry]);
  return fc.constantFrom(...byTag.values()).chain((values) => fc.constantFrom(...values));
};

const built = new WeakMap<(tag: string) => boolean, fc.Arbitrary<Tagged<unknown>>>();

/** Any hostile value, tags filtered by `allowed` (built once per filter). */
export const hostileValue = (allowed: (tag: string) => boolean): fc.Arbitrary<Tagged<unknown>> => {
  let arbitrary = built.get(allowed);
  if (!arbitrary) built.set(allowed, (arbitrary = buildHostileValue(allowed)));
  return arbitrary;
};

const buildHostileValue = (allowed: (tag: string) => boolean): fc.Arbitrary<Tagged<unknown>> => {
  const pool = [...ODD_DATES, ...ODD_NUMBERS, ...ODD_STRINGS, ...WRONG_TYPES].filter((v) => allowed(v.tag));
  const choices: Array<fc.WeightedArbitrary<Tagged<unknown>>> = [];
  if (pool.length > 0) choices.push({ weight: 8, arbitrary: fromPool(pool) });
  if (allowed('unicode/random') || allowed('long-string'))
    choices.push({
      weight: 2,
      arbitrary: randomString().filter((v) => allowed(v.tag)),
    });
  if (allowed('huge-array')) choices.push({ weight: 1, arbitrary: hugeArray() });
  if (allowed('deep-nesting')) choices.push({ weight: 1, arbitrary: deepValue() });
  if (choices.length === 0) return fc.constant({ tag: 'wrong-type', value: null });
  return fc.oneof(...choices);
};
