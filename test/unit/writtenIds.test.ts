import { expect } from 'chai';
import { WrittenIds } from '../../src/core/writtenIds.ts';

describe('WrittenIds (the documents a rebuild has written)', () => {
  it('nothing may exist before anything is written', () => {
    const written = new WrittenIds();
    expect(written.mayExist('applications', 'va_1')).to.equal(false);
  });

  it('every id written may exist, across the growth of its filters; few others do; collections apart', () => {
    const written = new WrittenIds();
    const n = 300_000; // past the first filter's 65,536 documents: three more filters
    for (let i = 0; i < n; i += 1) written.add('applications', `va_${i}`);
    let missing = 0;
    for (let i = 0; i < n; i += 1) if (!written.mayExist('applications', `va_${i}`)) missing += 1;
    expect(missing).to.equal(0);
    let falsePositives = 0;
    for (let i = n; i < 2 * n; i += 1) if (written.mayExist('applications', `va_${i}`)) falsePositives += 1;
    expect(falsePositives / n).to.be.below(0.02);
    expect(written.mayExist('orders', 'va_1')).to.equal(false);
    written.add('orders', 'va_1');
    expect(written.mayExist('orders', 'va_1')).to.equal(true);
    expect(written.mayExist('orders', 'va_2')).to.equal(false);
  });

  it('ids that differ in one character, in length, or are empty or non-ASCII', () => {
    const written = new WrittenIds();
    const ids = ['', 'a', 'b', 'ab', 'ba', 'v_1|2026-01-01', 'v_1|2026-01-02', 'ü', '\u{1F600}', 'x'.repeat(10_000)];
    for (const id of ids) written.add('c', id);
    for (const id of ids) expect(written.mayExist('c', id), id).to.equal(true);
  });
});
