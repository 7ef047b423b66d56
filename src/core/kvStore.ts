/**
 * Expiring key-value records that are not events: the quotes kept by validate for apply, and
 * the responses kept for `Idempotency-Key`. They are not read models (a replay must not drop
 * them) and not facts about vouchers (they expire).
 */
export interface KvStore {
  get<T>(namespace: string, key: string): Promise<T | null>;
  /** Stores the value until `expiresAt` (ms since epoch). */
  put<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<void>;
  /** Stores the value only when no live record has the key; true when stored. */
  putIfAbsent<T>(namespace: string, key: string, value: T, expiresAt: number): Promise<boolean>;
  delete(namespace: string, key: string): Promise<void>;
  /** Removes the records expired at `now`; returns how many. */
  purgeExpired(now: number): Promise<number>;
  close(): Promise<void>;
}
