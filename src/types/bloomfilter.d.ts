/** The parts of the `bloomfilter` package (plain JavaScript, no types of its own) the service uses. */
declare module 'bloomfilter' {
  export class BloomFilter {
    /** `m` bits (rounded up to whole 32-bit buckets), or the buckets of a filter to copy; `k` hashes. */
    constructor(m: number | ArrayLike<number>, k: number);
    readonly m: number;
    readonly k: number;
    /** The bits, 32 to a bucket; the package reads them from this field at each call, so it may be replaced by buckets of the same length. */
    buckets: Uint32Array;
    add(value: string): void;
    /** False: `value` was never added. True: it probably was. */
    test(value: string): boolean;
  }
}
