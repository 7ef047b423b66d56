import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn 4 KiB at a time: one CSPRNG call serves many ids.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

const nextByte = (): number => {
  if (offset === POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  return pool[offset++]!;
};

/** `length` base62 characters from the platform's CSPRNG (rejection sampling, no modulo bias). */
export const randomBase62 = (length: number): string => {
  let out = '';
  while (out.length < length) {
    const byte = nextByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
};

/** Base62 digits of a time in ms: 8 of them reach the year 8900. */
const TIME_DIGITS = 8;

/**
 * `ms` as TIME_DIGITS base62 digits, most significant first, zero-padded: the alphabet is in
 * ASCII order, so the strings sort as the times do.
 */
export const base62Time = (ms: number): string => {
  let out = '';
  let rest = Math.max(0, Math.floor(ms));
  for (let i = 0; i < TIME_DIGITS; i += 1) {
    out = ALPHABET[rest % 62]! + out;
    rest = Math.floor(rest / 62);
  }
  return out;
};

export interface IdGenerator {
  voucherId(): string;
  /** An application's id, made at `now` (the command's time). */
  applicationId(now: Date): string;
}

/**
 * Voucher ids: `v_` plus 20 random base62 characters (about 119 bits). Application ids: `va_`
 * plus the time in 8 base62 digits and 16 random characters (about 95 bits), so that ids made
 * later sort later and every index keyed by them (the voucher's snapshot keys, the applications
 * read model) grows at its right edge instead of at a random page (decision 076).
 */
export const randomIds: IdGenerator = {
  voucherId: () => `v_${randomBase62(20)}`,
  applicationId: (now) => `va_${base62Time(now.getTime())}${randomBase62(16)}`,
};
