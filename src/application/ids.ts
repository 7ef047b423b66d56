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

export interface IdGenerator {
  voucherId(): string;
  applicationId(): string;
}

/** Ids: prefix plus 20 random base62 characters (about 119 bits). */
export const randomIds: IdGenerator = {
  voucherId: () => `v_${randomBase62(20)}`,
  applicationId: () => `va_${randomBase62(20)}`,
};
