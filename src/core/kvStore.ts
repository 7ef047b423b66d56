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
  /**
   * Stores the value as a record of `owner` (an API key id), unless the owner's live records in
   * the namespace would then number more than `limit`: replacing a live record of the same key
   * and owner adds none. Atomic, so concurrent puts never take an owner past the limit. Answers
   * whether it stored and, when it did not, the owner's live records as they are now.
   */
  putOwned<T>(
    namespace: string,
    key: string,
    value: T,
    expiresAt: number,
    quota: { owner: string; limit: number },
  ): Promise<OwnedPut>;
  /** The keys of the owner's live records in the namespace, earliest expiry first. */
  ownedKeys(namespace: string, owner: string): Promise<Array<{ key: string; expiresAt: number }>>;
  /** Removes the records expired at `now`; returns how many. */
  purgeExpired(now: number): Promise<number>;
  close(): Promise<void>;
}

/** An owner's live records in a namespace: how many, and when the earliest of them expires (null: none). */
export interface OwnedRecords {
  count: number;
  nextExpiresAt: number | null;
}

/** What putOwned did: stored, or refused with the owner's live records (at or above the limit). */
export type OwnedPut = { stored: true } | ({ stored: false } & OwnedRecords);
