import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` base62 characters from the platform's CSPRNG (rejection sampling, no modulo bias). */
export const randomBase62 = (length: number): string => {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
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
