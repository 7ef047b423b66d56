import { hash } from 'node:crypto';
import { isoSeconds, type Clock } from '../domain/clock.ts';
import { DomainError } from '../domain/errors.ts';
import type { EventStore, RecordedEvent, Subscription } from '../core/eventStore.ts';
import type { KvStore } from '../core/kvStore.ts';
import type { Environment } from './context.ts';
import { randomBase62 } from './ids.ts';

export const ALL_SCOPES = [
  'vouchers:read',
  'vouchers:write',
  'vouchers:delete',
  'vouchers:redeem',
  'analytics:read',
  'webhooks:manage',
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export const isScope = (value: string): value is Scope => (ALL_SCOPES as readonly string[]).includes(value);

export interface ApiKeyRecord {
  id: string;
  name: string;
  environment: Environment;
  scopes: Scope[];
  /** Shown in lists instead of the key: prefix and last four characters. */
  prefix: string;
  last4: string;
  hash: string;
  createdAt: string;
  createdBy: string;
  revokedAt?: string;
  revokedBy?: string;
  lastUsedAt?: string;
}

type ApiKeyCreatedData = Omit<ApiKeyRecord, 'revokedAt' | 'revokedBy' | 'lastUsedAt'>;
interface ApiKeyRevokedData {
  id: string;
  revokedAt: string;
  revokedBy: string;
}

/** The account store's events: the audit trail of API keys. */
export type ApiKeyEvent =
  { type: 'ApiKeyCreated'; data: ApiKeyCreatedData } | { type: 'ApiKeyRevoked'; data: ApiKeyRevokedData };

export const API_KEYS_STREAM = 'apiKeys';
const LAST_USED = 'key_last_used';
/** Last-use times are written at most this often per key (they are shown in minutes). */
const LAST_USED_WRITE_MS = 60_000;

export const hashKey = (key: string): string => hash('sha256', key, 'hex');

export const environmentOfKey = (key: string): Environment | undefined =>
  key.startsWith('sk_test_') ? 'sandbox' : key.startsWith('sk_live_') ? 'production' : undefined;

const KEY_SHAPE = /^sk_(test|live)_[A-Za-z0-9]{16,128}$/;

/**
 * API keys. Keys are random (32 base62 characters, ~190 bits), so a plain SHA-256 of the key is
 * the stored verifier; the key itself is never stored or logged and exists only in the answer to
 * its creation. Keys live as `ApiKeyCreated` / `ApiKeyRevoked` events (with who and when) in the
 * account event store, the audit trail; keys from VOUCHER_API_KEYS live only in memory.
 * `follow()` applies events written by other processes (the keys CLI), so a key revoked there
 * stops working here within the store's poll interval.
 */
export class ApiKeyRegistry {
  private readonly byHash = new Map<string, ApiKeyRecord>();
  private readonly byId = new Map<string, ApiKeyRecord>();
  private readonly lastWritten = new Map<string, number>();
  private position = 0;

  /** The second (Unix) each key's `lastUsedAt` was last rendered for. */
  private readonly renderedSecond = new Map<string, number>();

  constructor(
    private readonly store: EventStore<ApiKeyEvent> | undefined,
    private readonly clock: Clock,
    private readonly kv?: KvStore,
  ) {}

  /** Loads the stored keys; `configured` are full keys given by the operator (all scopes). */
  async load(configured: string[] = []): Promise<void> {
    for (const key of configured) {
      const environment = environmentOfKey(key);
      if (!environment || !KEY_SHAPE.test(key))
        throw new Error('VOUCHER_API_KEYS holds a value that is not an sk_test_/sk_live_ key');
      const hash = hashKey(key);
      this.remember({
        id: `key_cfg_${hash.slice(0, 12)}`,
        name: 'from VOUCHER_API_KEYS',
        environment,
        scopes: [...ALL_SCOPES],
        prefix: key.slice(0, 8),
        last4: key.slice(-4),
        hash,
        createdAt: isoSeconds(this.clock.now()),
        createdBy: 'VOUCHER_API_KEYS',
      });
    }
    for (const event of this.store ? await this.store.readStream(API_KEYS_STREAM) : []) this.applyEvent(event);
    for (const record of this.byId.values()) {
      const used = await this.kv?.get<string>(LAST_USED, record.id);
      if (used) record.lastUsedAt = used;
    }
  }

  /** Keeps following the account store: keys created or revoked elsewhere apply here too. */
  follow(onError?: (error: unknown) => void): Subscription | undefined {
    return this.store?.subscribeToAll({ after: this.position, onError }, (events) => {
      events.forEach((e) => this.applyEvent(e));
    });
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Every key, newest first (revoked ones included, marked). */
  list(): ApiKeyRecord[] {
    return [...this.byId.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  }

  get(id: string): ApiKeyRecord | undefined {
    return this.byId.get(id);
  }

  /** The live key record for a presented key, or undefined. Records the use. */
  authenticate(presented: string): ApiKeyRecord | undefined {
    // Looked up by the SHA-256 of the presented key: the lookup's timing can tell at most
    // something about that hash, which helps nobody find a stored key (no constant-time compare
    // is needed after an exact-match lookup on a hash).
    const record = this.byHash.get(hashKey(presented));
    if (!record || record.revokedAt !== undefined) return undefined;
    this.touch(record);
    return record;
  }

  /** Creates a key, records it as an event, and returns the full key (the only time it exists). */
  async create(
    environment: Environment,
    name: string,
    scopes: Scope[] = [...ALL_SCOPES],
    createdBy = 'system',
  ): Promise<{ key: string; record: ApiKeyRecord }> {
    if (!this.store) throw new Error('no account store to record keys in');
    const granted = ALL_SCOPES.filter((s) => scopes.includes(s));
    if (granted.length === 0)
      throw new DomainError('INVALID_REQUEST', 'A key needs at least one scope', [
        { field: 'scopes', message: 'must name at least one scope' },
      ]);
    const key = `${environment === 'sandbox' ? 'sk_test_' : 'sk_live_'}${randomBase62(32)}`;
    const data: ApiKeyCreatedData = {
      id: `key_${randomBase62(16)}`,
      name: name.trim() || 'Unnamed key',
      environment,
      scopes: granted,
      prefix: key.slice(0, 8),
      last4: key.slice(-4),
      hash: hashKey(key),
      createdAt: isoSeconds(this.clock.now()),
      createdBy,
    };
    await this.store.appendToStream(API_KEYS_STREAM, [{ type: 'ApiKeyCreated', data: { ...data } }]);
    this.remember({ ...data });
    return { key, record: this.byId.get(data.id)! };
  }

  /** Revokes a key (idempotent). Unknown ids and operator-configured keys cannot be revoked. */
  async revoke(id: string, revokedBy = 'system'): Promise<ApiKeyRecord> {
    const record = this.byId.get(id);
    if (!record || !this.store || record.id.startsWith('key_cfg_')) {
      throw new DomainError('INVALID_REQUEST', `No revocable key has the id ${id}`, [
        { field: 'id', message: 'is not a stored key' },
      ]);
    }
    if (record.revokedAt !== undefined) return record;
    const data: ApiKeyRevokedData = { id, revokedAt: isoSeconds(this.clock.now()), revokedBy };
    await this.store.appendToStream(API_KEYS_STREAM, [{ type: 'ApiKeyRevoked', data: { ...data } }]);
    Object.assign(record, { revokedAt: data.revokedAt, revokedBy: data.revokedBy });
    return record;
  }

  private touch(record: ApiKeyRecord): void {
    const now = this.clock.now();
    const second = Math.floor(now.getTime() / 1000);
    if (this.renderedSecond.get(record.id) !== second) {
      // rendered once per second, not per request
      this.renderedSecond.set(record.id, second);
      record.lastUsedAt = isoSeconds(now);
    }
    if (!this.kv || now.getTime() - (this.lastWritten.get(record.id) ?? 0) < LAST_USED_WRITE_MS) return;
    this.lastWritten.set(record.id, now.getTime());
    void this.kv.put(LAST_USED, record.id, record.lastUsedAt, Number.MAX_SAFE_INTEGER).catch(() => undefined);
  }

  private remember(record: ApiKeyRecord): void {
    this.byHash.set(record.hash, record);
    this.byId.set(record.id, record);
  }

  private applyEvent(event: RecordedEvent<ApiKeyEvent>): void {
    if (event.streamId !== API_KEYS_STREAM) return;
    this.position = Math.max(this.position, event.position);
    if (event.type === 'ApiKeyCreated') {
      const data = event.data;
      if (!this.byId.has(data.id)) this.remember({ ...data });
    } else if (event.type === 'ApiKeyRevoked') {
      const { id, revokedAt, revokedBy } = event.data;
      const record = this.byId.get(id);
      if (record && record.revokedAt === undefined) Object.assign(record, { revokedAt, revokedBy });
    }
  }
}
