/**
 * The documents a rebuild has written since it emptied its collections, as one Bloom filter per
 * collection: `mayExist` is false only for a document the rebuild has certainly not written (so
 * it is absent from the read store, and the runner need not look it up), true for every document
 * written and for about 1 % of the others (they are looked up, and not found).
 *
 * Memory is bounded by the documents written, not by the ids asked about: about 10 bits per
 * document. A collection's filter starts at 2^16 documents and a new filter of twice the size
 * is added whenever the newest is full (a scalable Bloom filter), so a small rebuild stays small
 * and a large one keeps its false-positive rate.
 */
const FIRST_CAPACITY = 1 << 16;
/** Bits per document and probes per id: about 1 % false positives per filter. */
const BITS_PER_DOC = 10;
const PROBES = 7;

/** FNV-1a over the UTF-16 code units, and a second hash from the same pass (double hashing). */
const hashes = (id: string): [number, number] => {
  let h1 = 0x811c9dc5;
  let h2 = 0x9747b28c;
  for (let i = 0; i < id.length; i += 1) {
    const c = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  // the second hash is odd, so the probes of one id never repeat within a power-of-two table
  return [h1 >>> 0, (h2 | 1) >>> 0];
};

class BloomFilter {
  private readonly bits: Uint32Array;
  private readonly mask: number;
  count = 0;

  constructor(readonly capacity: number) {
    // a power of two of bits, at least BITS_PER_DOC per document
    let size = 32;
    while (size < capacity * BITS_PER_DOC) size *= 2;
    this.bits = new Uint32Array(size / 32);
    this.mask = size - 1;
  }

  add(h1: number, h2: number): void {
    for (let i = 0; i < PROBES; i += 1) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count += 1;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0; i < PROBES; i += 1) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

export class WrittenIds {
  private readonly filters = new Map<string, BloomFilter[]>();

  /** False when `collection/id` has certainly not been written since the collections were emptied. */
  mayExist(collection: string, id: string): boolean {
    const filters = this.filters.get(collection);
    if (filters === undefined) return false;
    const [h1, h2] = hashes(id);
    for (const filter of filters) if (filter.has(h1, h2)) return true;
    return false;
  }

  /** Records that `collection/id` is written. */
  add(collection: string, id: string): void {
    let filters = this.filters.get(collection);
    if (filters === undefined) this.filters.set(collection, (filters = [new BloomFilter(FIRST_CAPACITY)]));
    const [h1, h2] = hashes(id);
    for (const filter of filters) if (filter.has(h1, h2)) return; // already recorded (or a false positive)
    let newest = filters.at(-1)!;
    if (newest.count >= newest.capacity) filters.push((newest = new BloomFilter(newest.capacity * 2)));
    newest.add(h1, h2);
  }
}
