/**
 * "Did you mean" codes on VOUCHER_NOT_FOUND (decision 018): bounded work whatever the input, and
 * shown only to keys that may read vouchers. The bounds are asserted on the work done (documents
 * read, distance cells computed), never on time.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import sinon from 'sinon';
import type { Document } from '../../src/core/readStore.ts';
import {
  SUGGEST_MAX_LENGTH,
  SUGGEST_NEIGHBOURS,
  boundedEditDistance,
  suggestCodes,
  type SuggestionWork,
} from '../../src/application/suggestions.ts';
import { TestService } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';

const ORDER = { value: 1000, currency: 'EUR' };

/** Plain two-row Levenshtein, the reference the bounded one must agree with. */
const levenshtein = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
};

describe('boundedEditDistance', () => {
  it('is the Levenshtein distance up to the cutoff, cutoff + 1 beyond, within a band of 2 × cutoff + 1 cells a row', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), maxLength: 24 });
    fc.assert(
      fc.property(text, text, fc.integer({ min: 0, max: 10 }), (a, b, max) => {
        const work: SuggestionWork = { candidates: 0, cells: 0 };
        expect(boundedEditDistance(a, b, max, work)).to.equal(Math.min(levenshtein(a, b), max + 1));
        expect(work.cells).to.be.at.most(a.length * (2 * max + 1));
      }),
      { numRuns: 2000 },
    );
  });

  it('computes nothing when the lengths alone differ by more than the cutoff', () => {
    const work: SuggestionWork = { candidates: 0, cells: 0 };
    expect(boundedEditDistance('a'.repeat(256), 'a', 10, work)).to.equal(11);
    expect(work.cells).to.equal(0);
  });
});

describe('HTTP suggestions on VOUCHER_NOT_FOUND: bounded, and only for keys that may read vouchers', () => {
  let service: TestService;
  let redeemOnly: string;
  let readAndRedeem: string;
  let found: sinon.SinonSpy;
  /** Documents the read store handed out since the last reset. */
  let documentsRead = 0;

  before(async () => {
    service = await TestService.start({ projectors: 'inline' });
    await service.createVoucher({ code: 'SPRING25', type: 'fixed', value: 100 });
    await service.createVoucher({ code: 'LONGCODE-0123456789-0123456789-0123456789', type: 'fixed', value: 100 });
    redeemOnly = (await service.embedded.keys.create('sandbox', 'redeem only', ['vouchers:redeem'])).key;
    readAndRedeem = (await service.embedded.keys.create('sandbox', 'reader', ['vouchers:read', 'vouchers:redeem'])).key;
    // 1,000 active codes sharing the first letter, written straight into the read model (the
    // suggestions read nothing else): Q0000KEY … Q0999KEY.
    const now = service.clock
      .now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
    const upserts = Array.from({ length: 1000 }, (_, i) => {
      const code = `Q${String(i).padStart(4, '0')}KEY`;
      const doc: Document = {
        id: `v_suggest${i}`,
        code,
        code_lower: code.toLowerCase(),
        type: 'fixed',
        value: 100,
        currency: null,
        config: null,
        conditions: {},
        status: 'active',
        valid_until: null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
        created_seq: 1_000_000 + i,
      };
      return { collection: 'vouchers', doc };
    });
    await service.sandbox.reads.writeBatch({ upserts });
    const reads = service.sandbox.reads;
    const find = reads.find.bind(reads);
    found = sinon.stub(reads, 'find').callsFake(async (...args: Parameters<typeof reads.find>) => {
      const docs = await find(...args);
      documentsRead += docs.length;
      return docs as never;
    });
  });
  after(async () => {
    found.restore();
    await service.stop();
  });
  beforeEach(() => {
    documentsRead = 0;
  });

  it('suggests to a key with vouchers:read, never to a key that may only redeem (validate and apply)', async () => {
    const reader = await service.post(
      '/v1/vouchers/validate',
      { code: 'SPRNG25', order: ORDER },
      { key: readAndRedeem },
    );
    expectError(reader, 404, 'VOUCHER_NOT_FOUND', { code: 'SPRNG25', suggestions: ['SPRING25'] });
    documentsRead = 0;

    const validate = await service.post(
      '/v1/vouchers/validate',
      { code: 'SPRNG25', order: ORDER },
      { key: redeemOnly },
    );
    expectError(validate, 404, 'VOUCHER_NOT_FOUND', { code: 'SPRNG25', suggestions: [] });
    const apply = await service.post(
      '/v1/vouchers/apply',
      { code: 'SPRNG25', order_id: 'sugg-1', order: ORDER },
      { key: redeemOnly },
    );
    expectError(apply, 404, 'VOUCHER_NOT_FOUND', { code: 'SPRNG25', suggestions: [] });
    expect(documentsRead, 'a redeem-only key makes no candidate read').to.equal(0);
  });

  it(`reads at most ${2 * SUGGEST_NEIGHBOURS} candidates among 1,000 codes sharing the first letter, and still finds the near one`, async () => {
    const res = await service.post('/v1/vouchers/validate', { code: 'Q0500KEX', order: ORDER });
    expect(res.status).to.equal(404);
    expect(res.body.error.details.suggestions[0]).to.equal('Q0500KEY');
    expect(res.body.error.details.suggestions).to.have.length.at.most(5);
    expect(documentsRead).to.be.greaterThan(0);
    expect(documentsRead).to.be.at.most(2 * SUGGEST_NEIGHBOURS);
  });

  it(`reads nothing for an unknown code longer than ${SUGGEST_MAX_LENGTH} characters`, async () => {
    const long = `Q${'b'.repeat(255)}`;
    const res = await service.post('/v1/vouchers/validate', { code: long, order: ORDER });
    expectError(res, 404, 'VOUCHER_NOT_FOUND', { code: long, suggestions: [] });
    // even one letter away from an existing 41-character code
    const near = 'LONGCODE-0123456789-0123456789-012345678X';
    const nearRes = await service.post('/v1/vouchers/validate', { code: near, order: ORDER });
    expectError(nearRes, 404, 'VOUCHER_NOT_FOUND', { code: near, suggestions: [] });
    expect(documentsRead).to.equal(0);
  });

  it('bounds the distance cells of one lookup by candidates × length × band', async () => {
    const code = `Q${'0'.repeat(SUGGEST_MAX_LENGTH - 1)}`;
    const work: SuggestionWork = { candidates: 0, cells: 0 };
    await suggestCodes(service.sandbox, code, work);
    expect(work.candidates).to.be.at.most(2 * SUGGEST_NEIGHBOURS);
    const cutoff = Math.floor(SUGGEST_MAX_LENGTH / 3);
    expect(work.cells).to.be.at.most(work.candidates * SUGGEST_MAX_LENGTH * (2 * cutoff + 1));
  });
});
