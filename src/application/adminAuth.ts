import { randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { KvStore } from '../core/kvStore.ts';

/** A stored password verifier: scrypt with its parameters and a random salt (never the password). */
export interface PasswordHash {
  algorithm: 'scrypt';
  N: number;
  r: number;
  p: number;
  salt: string;
  hash: string;
}

/** scrypt cost: 2^15 × 8 × 128 bytes = 32 MiB and some tens of ms per check (off the event loop). */
const PARAMS = { N: 32_768, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
/** Longer candidates are refused unhashed (a password box does not need more). */
const MAX_PASSWORD_LENGTH = 1_024;

export const ADMIN_NAMESPACE = 'admin';
export const ADMIN_PASSWORD_KEY = 'password';

const derive = (password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (error, key) => (error ? reject(error) : resolve(key)));
  });

export const hashPassword = async (password: string): Promise<PasswordHash> => {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, PARAMS);
  return { algorithm: 'scrypt', ...PARAMS, salt: salt.toString('base64'), hash: hash.toString('base64') };
};

export const verifyPassword = async (candidate: string, stored: PasswordHash): Promise<boolean> => {
  if (typeof candidate !== 'string' || candidate.length === 0 || candidate.length > MAX_PASSWORD_LENGTH) return false;
  const expected = Buffer.from(stored.hash, 'base64');
  const actual = await derive(candidate, Buffer.from(stored.salt, 'base64'), stored);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
};

/** Letters and digits that cannot be mistaken for one another (no 0/o, 1/l/i). */
const READABLE = 'abcdefghjkmnpqrstuvwxyz23456789';

/** 20 random characters in four groups of five, e.g. `k7fqa-mx3pe-…` (about 99 bits). */
export const generatePassword = (): string =>
  Array.from({ length: 4 }, () => Array.from({ length: 5 }, () => READABLE[randomInt(READABLE.length)]).join('')).join(
    '-',
  );

const isPasswordHash = (value: unknown): value is PasswordHash => {
  const v = value as Partial<PasswordHash> | null;
  return (
    !!v &&
    v.algorithm === 'scrypt' &&
    typeof v.salt === 'string' &&
    typeof v.hash === 'string' &&
    Number.isInteger(v.N) &&
    Number.isInteger(v.r) &&
    Number.isInteger(v.p)
  );
};

/**
 * The operator's password for the dashboard. `ADMIN_PASSWORD`, when set, is the only password
 * (hashed in memory at start). Otherwise the first start generates one, stores only its scrypt
 * hash in the account store (no expiry) and hands the password back once, for the terminal.
 */
export class AdminAuth {
  private constructor(
    private readonly verifier: PasswordHash,
    readonly source: 'ADMIN_PASSWORD' | 'stored',
  ) {}

  /** A password given by the operator (ADMIN_PASSWORD, or a test). */
  static async fromPassword(password: string): Promise<AdminAuth> {
    if (!password) throw new Error('ADMIN_PASSWORD is empty');
    return new AdminAuth(await hashPassword(password), 'ADMIN_PASSWORD');
  }

  /**
   * `configured` wins; else the stored hash; else a new password, returned as `generated`
   * (the only time it exists). Two processes starting together agree on one stored hash.
   */
  static async open(kv: KvStore, configured?: string): Promise<{ auth: AdminAuth; generated?: string }> {
    if (configured) return { auth: await AdminAuth.fromPassword(configured) };
    const stored = await kv.get<unknown>(ADMIN_NAMESPACE, ADMIN_PASSWORD_KEY);
    if (isPasswordHash(stored)) return { auth: new AdminAuth(stored, 'stored') };
    if (stored !== null) throw new Error('The stored dashboard password record is damaged; set ADMIN_PASSWORD');
    const generated = generatePassword();
    const hash = await hashPassword(generated);
    if (await kv.putIfAbsent(ADMIN_NAMESPACE, ADMIN_PASSWORD_KEY, hash, Number.MAX_SAFE_INTEGER)) {
      return { auth: new AdminAuth(hash, 'stored'), generated };
    }
    return AdminAuth.open(kv);
  }

  verify(candidate: string): Promise<boolean> {
    return verifyPassword(candidate, this.verifier);
  }
}
