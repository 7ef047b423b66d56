import { createHash } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { canonicalJson, fingerprint } from '../../src/application/views.ts';

/**
 * The implementation the stored fingerprints (VoucherApplied's order and customer fingerprints,
 * idempotency records) were made with: a repeat of an old request must still match them.
 */
const replacerCanonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
const replacerFingerprint = (value: unknown): string =>
  createHash('sha256')
    .update(replacerCanonicalJson(value ?? null))
    .digest('base64url')
    .slice(0, 22);

// Keys that exercise the ordering rules: array indices, numeric-looking non-indices, unicode.
const key = fc.oneof(
  fc.string(),
  fc.constantFrom('0', '1', '2', '10', '9', '01', '-1', '1.5', '4294967294', '4294967295', 'a', 'B', 'é', '__proto__x'),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: false }),
    fc.string(),
    fc.constant(undefined),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(key, tie('node'), { maxKeys: 6 }),
  ),
})).node;

describe('canonicalJson (property): the same text as the replacer-based original', () => {
  it('for any JSON-like value, with undefined members and index-like keys', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).to.equal(replacerCanonicalJson(v));
        expect(fingerprint(v)).to.equal(replacerFingerprint(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it('for objects with up to 60 keys of any UTF-16 text (short lists are sorted by hand, long ones by the built-in sort)', () => {
    const anyKey = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 4 }),
      fc.string({ unit: 'binary-ascii', maxLength: 3 }),
      key,
    );
    const short = fc.dictionary(anyKey, fc.integer(), { maxKeys: 8 });
    const long = fc.dictionary(anyKey, fc.integer(), { minKeys: 33, maxKeys: 60 });
    fc.assert(
      fc.property(fc.oneof(short, long), (v) => {
        expect(canonicalJson(v)).to.equal(replacerCanonicalJson(v));
      }),
      { numRuns: 1_000 },
    );
  });

  it('for no value (null or undefined: an apply without a customer), whose fingerprint is computed once', () => {
    expect(fingerprint(null)).to.equal(replacerFingerprint(null));
    expect(fingerprint(undefined)).to.equal(replacerFingerprint(undefined));
  });

  it('for values with toJSON (dates) and keys given in any order', () => {
    const date = new Date('2026-11-22T12:00:00Z');
    const samples: unknown[] = [
      { b: 1, a: { d: [3, { z: 1, y: undefined }], c: date } },
      { 10: 'x', 9: 'y', b: 2, a: 1 },
      [undefined, () => 1, { f: () => 1 }],
      { value: 11_100, currency: null, items: [{ id: 'sku', price: 5_000, quantity: 1 }] },
    ];
    for (const sample of samples) expect(canonicalJson(sample)).to.equal(replacerCanonicalJson(sample));
    expect(canonicalJson({ b: 1, a: 2 })).to.equal('{"a":2,"b":1}');
    expect(canonicalJson({ 10: 'x', 9: 'y', b: 2, a: 1 })).to.equal('{"9":"y","10":"x","a":1,"b":2}');
  });
});
