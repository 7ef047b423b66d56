import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../domain/clock.ts';
import type { EventStore, RecordedEvent } from '../infrastructure/eventStore/eventStore.ts';
import type { Environment } from './context.ts';
import { randomBase62 } from './ids.ts';

export const ALL_SCOPES = [
  'vouchers:read', 'vouchers:write', 'vouchers:delete', 'vouchers:redeem', 'analytics:read', 'webhooks:manage',
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

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
  revokedAt?: string;
}

export interface ApiKeyCreatedData extends Omit<ApiKeyRecord, 'revokedAt'> { createdBy: string }

export const API_KEYS_STREAM = 'apiKeys';

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

export const environmentOfKey = (key: string): Environment | undefined =>
  key.startsWith('sk_test_') ? 'sandbox' : key.startsWith('sk_live_') ? 'production' : undefined;

const KEY_SHAPE = /^sk_(test|live)_[A-Za-z0-9]{16,128}$/;

/**
 * API keys. Keys are random (32 base62 characters, ~190 bits), so a plain SHA-256 of the key is
 * the stored verifier; the key itself is never stored or logged and is shown only once, when
 * created. Keys made by the service live as `ApiKeyCreated` / `ApiKeyRevoked` events in the
 * account event store; keys from VOUCHER_API_KEYS live only in memory.
 */
export class ApiKeyRegistry {
  private readonly byHash = new Map<string, ApiKeyRecord>();

  constructor(private readonly store: EventStore | undefined, private readonly clock: Clock) {}

  /** Loads the stored keys; `configured` are full keys given by the operator (all scopes). */
  async load(configured: string[] = []): Promise<void> {
    for (const key of configured) {
      const environment = environmentOfKey(key);
      if (!environment || !KEY_SHAPE.test(key)) throw new Error('VOUCHER_API_KEYS holds a value that is not an sk_test_/sk_live_ key');
      const hash = hashKey(key);
      this.byHash.set(hash, {
        id: `key_cfg_${hash.slice(0, 12)}`, name: 'from VOUCHER_API_KEYS', environment, scopes: [...ALL_SCOPES],
        prefix: key.slice(0, 8), last4: key.slice(-4), hash, createdAt: this.clock.now().toISOString(),
      });
    }
    for (const event of this.store ? await this.store.readStream(API_KEYS_STREAM) : []) this.applyEvent(event);
  }

  get size(): number { return this.byHash.size; }

  list(): ApiKeyRecord[] { return [...this.byHash.values()]; }

  /** The live key record for a presented key, or undefined. */
  authenticate(presented: string): ApiKeyRecord | undefined {
    const hash = hashKey(presented);
    const record = this.byHash.get(hash);
    if (!record || record.revokedAt !== undefined) return undefined;
    return timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex')) ? record : undefined;
  }

  /** Creates a key, records it as an event, and returns the full key (the only time it exists). */
  async create(environment: Environment, name: string, scopes: Scope[] = [...ALL_SCOPES], createdBy = 'system'): Promise<{ key: string; record: ApiKeyRecord }> {
    if (!this.store) throw new Error('no account store to record keys in');
    const key = `${environment === 'sandbox' ? 'sk_test_' : 'sk_live_'}${randomBase62(32)}`;
    const data: ApiKeyCreatedData = {
      id: `key_${randomBase62(16)}`, name, environment, scopes, prefix: key.slice(0, 8), last4: key.slice(-4),
      hash: hashKey(key), createdAt: this.clock.now().toISOString(), createdBy,
    };
    const [event] = await this.appendAndRead({ type: 'ApiKeyCreated', data: { ...data } });
    this.applyEvent(event!);
    return { key, record: this.byHash.get(data.hash)! };
  }

  private async appendAndRead(event: { type: string; data: Record<string, unknown> }): Promise<RecordedEvent[]> {
    const { nextExpectedRevision } = await this.store!.appendToStream(API_KEYS_STREAM, [event]);
    return this.store!.readStream(API_KEYS_STREAM, { fromRevision: nextExpectedRevision });
  }

  private applyEvent(event: RecordedEvent): void {
    if (event.type === 'ApiKeyCreated') {
      const { createdBy: _by, ...record } = event.data as unknown as ApiKeyCreatedData;
      this.byHash.set(record.hash, record);
    } else if (event.type === 'ApiKeyRevoked') {
      const { id, revokedAt } = event.data as { id: string; revokedAt: string };
      for (const record of this.byHash.values()) if (record.id === id) record.revokedAt = revokedAt;
    }
  }
}
