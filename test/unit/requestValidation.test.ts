/**
 * The request validator (src/http/validation.ts): a fail-fast pass first, the pass that lists
 * every problem only on bodies small enough for it to be cheap, and details a reader understands.
 */
import { expect } from 'chai';
import { DomainError, InvalidRequestError } from '../../src/domain/errors.ts';
import { textNestedDeeperThan, nestedDeeperThan } from '../../src/http/body.ts';
import * as schemas from '../../src/http/schemas.ts';
import { compileBody, compileQuery, DETAILED_PASS_MAX_VALUES, hasAtMostValues } from '../../src/http/validation.ts';

type Pass = ['fast' | 'detailed', number];

/** Validates `value` with a fresh validator of `schema`; the error thrown and the passes it ran. */
const run = (schema: object, value: unknown, query = false): { error: InvalidRequestError; passes: Pass[] } => {
  const passes: Pass[] = [];
  const validate = (query ? compileQuery : compileBody)(schema, (pass, errors) => passes.push([pass, errors]));
  try {
    validate(value);
  } catch (error) {
    expect(error).to.be.instanceOf(InvalidRequestError);
    return { error: error as InvalidRequestError, passes };
  }
  throw new Error('expected INVALID_REQUEST');
};

const emptyItems = (count: number) => ({
  code: 'X',
  order: { value: 100, items: Array.from({ length: count }, () => ({})) },
});

describe('request validation', () => {
  it('340,000 empty items: only the fail-fast pass runs, and it stops at the first problem (the cap)', () => {
    const { error, passes } = run(schemas.validateSchema, emptyItems(340_000));
    expect(passes).to.deep.equal([['fast', 1]]);
    expect(error.details).to.deep.equal([
      { field: 'order.items', message: 'must have at most 1000 items; it has 340000' },
    ]);
    expect(error.detailsTotal).to.equal(null);
    expect(error.truncated).to.equal(true);
  });

  it('1,000 empty items (within the cap and the budget): every problem counted, the first 20 listed', () => {
    const { error, passes } = run(schemas.validateSchema, emptyItems(1000));
    expect(passes).to.deep.equal([
      ['fast', 1],
      ['detailed', 3000],
    ]);
    expect(error.details).to.have.length(20);
    expect(error.detailsTotal).to.equal(3000);
    expect(error.truncated).to.equal(true);
  });

  it('a body over the budget of values gets the first problem only, however small its arrays', () => {
    // 1,000 items of 11 values each: within the cap, over the 10,000 values of the detailed pass
    const items = Array.from({ length: 1000 }, (_, i) => ({
      id: `p${i}`,
      price: 1,
      quantity: 1,
      a: 1,
      b: 2,
      c: 3,
      d: 4,
      e: 5,
      f: 6,
      g: 7,
    }));
    const { error, passes } = run(schemas.validateSchema, { code: 'X', order: { value: 100_000, items } });
    expect(passes).to.deep.equal([['fast', 1]]);
    expect(error.details).to.deep.equal([{ field: 'order.items[0].a', message: 'is not allowed' }]);
    expect(error.detailsTotal).to.equal(null);
  });

  it('counts values without walking past the limit', () => {
    expect(hasAtMostValues({ a: [1, 2, { b: 3 }] }, 6)).to.equal(true);
    expect(hasAtMostValues({ a: [1, 2, { b: 3 }] }, 5)).to.equal(false);
    expect(
      hasAtMostValues(
        Array.from({ length: 100_000 }, () => ({})),
        DETAILED_PASS_MAX_VALUES,
      ),
    ).to.equal(false);
  });

  it('a float amount says cents; a lower-case currency says ISO 4217, not the regular expression', () => {
    const { error } = run(schemas.validateSchema, { code: 'X', order: { value: 10.5, currency: 'usd' } });
    expect(error.details).to.deep.equal([
      { field: 'order.value', message: 'must be a whole number of cents (an integer: 19.99 is sent as 1999)' },
      { field: 'order.currency', message: 'must be an upper-case ISO 4217 currency code such as USD' },
    ]);
    const negative = run(schemas.validateSchema, { code: 'X', order: { value: -1 } }).error;
    expect(negative.details).to.deep.equal([{ field: 'order.value', message: 'must be at least 0 cents' }]);
  });

  it("an anyOf: the alternatives of the value's own type speak; when none or all fit, they are joined", () => {
    const { error } = run(schemas.updateVoucherSchema, {
      currency: 'usd', // a string: the currency's message, not "or null"
      conditions: { valid_until: 5, product_ids: ['a', 3] }, // a number fits neither; a list: its item
    });
    expect(error.details).to.deep.equal([
      { field: 'currency', message: 'must be an upper-case ISO 4217 currency code such as USD' },
      { field: 'conditions.valid_until', message: 'must be string or null' },
      { field: 'conditions.product_ids[1]', message: 'must be string' },
    ]);
  });

  it('created_after takes a timestamp or a date; anything else names both', () => {
    const validate = compileQuery<{ created_after?: string }>(schemas.listVouchersQuery);
    expect(validate({ created_after: '2026-11-23' }).created_after).to.equal('2026-11-23');
    expect(validate({ created_after: '2026-11-23T10:00:00Z' }).created_after).to.equal('2026-11-23T10:00:00Z');
    const { error } = run(schemas.listVouchersQuery, { created_after: '2026-11-31' }, true);
    expect(error.details).to.deep.equal([
      {
        field: 'created_after',
        message:
          'must be an ISO 8601 timestamp with a zone, such as 2026-01-31T00:00:00Z (seconds 00 to 59) or a date such as 2026-01-31',
      },
    ]);
  });

  it('an INVALID_REQUEST error lists at most 20 problems and keeps their count', () => {
    const problems = Array.from({ length: 25 }, (_, i) => ({ field: `f${i}`, message: 'is not allowed' }));
    const error = new InvalidRequestError('x', problems, problems.length);
    expect(error).to.be.instanceOf(DomainError);
    expect(error.details).to.have.length(20);
    expect(error.truncated).to.equal(true);
  });

  it('measures nesting on the text (skipping strings) and on parsed values alike', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(textNestedDeeperThan(deep(32), 32)).to.equal(false);
    expect(textNestedDeeperThan(deep(33), 32)).to.equal(true);
    expect(textNestedDeeperThan(`{"a":"${'['.repeat(100)}\\"[["}`, 2)).to.equal(false);
    expect(nestedDeeperThan(JSON.parse(deep(32)), 32)).to.equal(false);
    expect(nestedDeeperThan(JSON.parse(deep(33)), 32)).to.equal(true);
    expect(nestedDeeperThan(JSON.parse(deep(200_000)), 32)).to.equal(true);
  });
});
