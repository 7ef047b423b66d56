/**
 * ApiKeyRegistry on a real (temp) account store: key shape, authentication, revocation, following
 * another registry's writes, reloading, VOUCHER_API_KEYS, scopes, last use.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import {
  ALL_SCOPES,
  API_KEYS_STREAM,
  ApiKeyRegistry,
  hashKey,
  type ApiKeyEvent,
  type Scope,
} from '../../src/application/apiKeys.ts';
import { accountFiles, openAccount, type Account } from '../../src/composition.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteKvStore } from '../../src/infrastructure/kvStore/sqliteKvStore.ts';
import { FakeClock } from '../support/fakeClock.ts';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` holds; bounded only by the mocha timeout (no time requirement here). */
const eventually = async (check: () => boolean): Promise<void> => {
  while (!check()) await sleep(10);
};

const expectDomainError = async (promise: Promise<unknown>, code: string): Promise<DomainError> => {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).code).to.equal(code);
    return error as DomainError;
  }
  expect.fail(`expected a DomainError ${code}`);
};

describe('ApiKeyRegistry', () => {
  let dir: string;
  let clock: FakeClock;
  const opened: Account[] = [];

  const open = async (configured: string[] = []): Promise<{ account: Account; keys: ApiKeyRegistry }> => {
    const result = await openAccount(dir, clock, configured);
    opened.push(result.account);
    return result;
  };

  const close = async (account: Account): Promise<void> => {
    opened.splice(opened.indexOf(account), 1);
    await account.events.close();
    await account.kv.close();
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-keys-'));
    clock = new FakeClock('2026-03-10T08:30:15.250Z');
  });

  afterEach(async () => {
    for (const account of opened.splice(0)) {
      await account.events.close();
      await account.kv.close();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('create', () => {
    it('returns a sandbox key sk_test_ + 32 base62 characters and a record that holds only its hash', async () => {
      const { keys } = await open();
      const { key, record } = await keys.create('sandbox', '  Checkout  ', ['vouchers:read'], 'alice');
      expect(key).to.match(/^sk_test_[A-Za-z0-9]{32}$/);
      expect(record).to.deep.equal({
        id: record.id,
        name: 'Checkout',
        environment: 'sandbox',
        scopes: ['vouchers:read'],
        prefix: 'sk_test_',
        last4: key.slice(-4),
        hash: sha256(key),
        createdAt: '2026-03-10T08:30:15Z',
        createdBy: 'alice',
      });
      expect(record.id).to.match(/^key_[A-Za-z0-9]{16}$/);
      expect(JSON.stringify(record)).to.not.include(key.slice(8));
      expect(hashKey(key)).to.equal(sha256(key));
    });

    it('returns a production key sk_live_ + 32 base62 characters, all scopes by default, "system" as creator', async () => {
      const { keys } = await open();
      const { key, record } = await keys.create('production', 'Backend');
      expect(key).to.match(/^sk_live_[A-Za-z0-9]{32}$/);
      expect(record.environment).to.equal('production');
      expect(record.prefix).to.equal('sk_live_');
      expect(record.scopes).to.deep.equal([...ALL_SCOPES]);
      expect(record.createdBy).to.equal('system');
    });

    it('gives every key its own random key and id', async () => {
      const { keys } = await open();
      const made = await Promise.all(Array.from({ length: 20 }, (_, i) => keys.create('sandbox', `k${i}`)));
      expect(new Set(made.map((m) => m.key)).size).to.equal(20);
      expect(new Set(made.map((m) => m.record.id)).size).to.equal(20);
      expect(keys.list()).to.have.length(20);
    });

    it('names an unnamed key "Unnamed key"', async () => {
      const { keys } = await open();
      expect((await keys.create('sandbox', '   ')).record.name).to.equal('Unnamed key');
    });

    it('keeps scopes in canonical order without duplicates, in the record and in the event', async () => {
      const { account, keys } = await open();
      const { record } = await keys.create('sandbox', 'mixed', [
        'webhooks:manage',
        'vouchers:redeem',
        'vouchers:read',
        'webhooks:manage',
      ]);
      expect(record.scopes).to.deep.equal(['vouchers:read', 'vouchers:redeem', 'webhooks:manage']);
      const [event] = await account.events.readStream(API_KEYS_STREAM);
      expect(event!.type).to.equal('ApiKeyCreated');
      expect(event!.type === 'ApiKeyCreated' && event!.data.scopes).to.deep.equal([
        'vouchers:read',
        'vouchers:redeem',
        'webhooks:manage',
      ]);
    });

    it('refuses an empty scope list with INVALID_REQUEST and records nothing', async () => {
      const { account, keys } = await open();
      const error = await expectDomainError(keys.create('sandbox', 'nothing', []), 'INVALID_REQUEST');
      expect(error.details).to.deep.equal([{ field: 'scopes', message: 'must name at least one scope' }]);
      expect(await account.events.readStream(API_KEYS_STREAM)).to.deep.equal([]);
      expect(keys.size).to.equal(0);
    });

    it('records ApiKeyCreated with who and when, and the hash but never the key', async () => {
      const { account, keys } = await open();
      const { key, record } = await keys.create('sandbox', 'Audit', ['analytics:read'], 'ops@example.com');
      const events = await account.events.readStream(API_KEYS_STREAM);
      expect(events.map((e) => e.type)).to.deep.equal(['ApiKeyCreated']);
      expect(events[0]!.data).to.deep.equal({
        id: record.id,
        name: 'Audit',
        environment: 'sandbox',
        scopes: ['analytics:read'],
        prefix: 'sk_test_',
        last4: key.slice(-4),
        hash: sha256(key),
        createdAt: '2026-03-10T08:30:15Z',
        createdBy: 'ops@example.com',
      });
      expect(JSON.stringify(events)).to.not.include(key.slice(8));
    });

    it('cannot create keys without an account store', async () => {
      const keys = new ApiKeyRegistry(undefined, clock);
      await keys.load();
      try {
        await keys.create('sandbox', 'nowhere');
        expect.fail('create without a store succeeded');
      } catch (error) {
        expect((error as Error).message).to.equal('no account store to record keys in');
      }
    });
  });

  describe('authenticate', () => {
    it("finds a created key, and rejects an unknown key, a near miss and the other environment's prefix", async () => {
      const { keys } = await open();
      const { key, record } = await keys.create('sandbox', 'auth');
      expect(keys.authenticate(key)).to.equal(record);
      expect(keys.authenticate(`sk_test_${'A'.repeat(32)}`)).to.equal(undefined);
      const lastChar = key.at(-1) === 'a' ? 'b' : 'a';
      expect(keys.authenticate(key.slice(0, -1) + lastChar)).to.equal(undefined);
      expect(keys.authenticate(key.replace('sk_test_', 'sk_live_'))).to.equal(undefined);
      expect(keys.authenticate(key.slice(8))).to.equal(undefined);
      expect(keys.authenticate('')).to.equal(undefined);
      expect(keys.authenticate(sha256(key))).to.equal(undefined);
    });

    it('rejects a revoked key and keeps accepting the others', async () => {
      const { keys } = await open();
      const revoked = await keys.create('sandbox', 'to revoke');
      const kept = await keys.create('sandbox', 'to keep');
      await keys.revoke(revoked.record.id, 'bob');
      expect(keys.authenticate(revoked.key)).to.equal(undefined);
      expect(keys.authenticate(kept.key)?.id).to.equal(kept.record.id);
    });
  });

  describe('revoke', () => {
    it('marks the key revoked with who and when, records ApiKeyRevoked once, and is idempotent', async () => {
      const { account, keys } = await open();
      const { record } = await keys.create('sandbox', 'once');
      clock.advance(90_000);
      const first = await keys.revoke(record.id, 'carol');
      expect(first.revokedAt).to.equal('2026-03-10T08:31:45Z');
      expect(first.revokedBy).to.equal('carol');
      clock.advance(60_000);
      const second = await keys.revoke(record.id, 'dave');
      expect(second.revokedAt).to.equal('2026-03-10T08:31:45Z');
      expect(second.revokedBy).to.equal('carol');
      const events = await account.events.readStream(API_KEYS_STREAM);
      expect(events.map((e) => e.type)).to.deep.equal(['ApiKeyCreated', 'ApiKeyRevoked']);
      expect(events[1]!.data).to.deep.equal({ id: record.id, revokedAt: '2026-03-10T08:31:45Z', revokedBy: 'carol' });
      expect(keys.list().map((r) => [r.id, r.revokedAt])).to.deep.equal([[record.id, '2026-03-10T08:31:45Z']]);
    });

    it('refuses an unknown id with INVALID_REQUEST and records nothing', async () => {
      const { account, keys } = await open();
      await keys.create('sandbox', 'other');
      const error = await expectDomainError(keys.revoke('key_DoesNotExist000'), 'INVALID_REQUEST');
      expect(error.message).to.include('key_DoesNotExist000');
      expect((await account.events.readStream(API_KEYS_STREAM)).map((e) => e.type)).to.deep.equal(['ApiKeyCreated']);
    });

    it('refuses a VOUCHER_API_KEYS key, which keeps working', async () => {
      const configured = `sk_test_${'C0nfigured'.repeat(3)}xy`;
      const { account, keys } = await open([configured]);
      const record = keys.authenticate(configured)!;
      expect(record.id).to.match(/^key_cfg_[0-9a-f]{12}$/);
      await expectDomainError(keys.revoke(record.id), 'INVALID_REQUEST');
      expect(keys.authenticate(configured)?.id).to.equal(record.id);
      expect(await account.events.readStream(API_KEYS_STREAM)).to.deep.equal([]);
    });
  });

  describe('VOUCHER_API_KEYS (configured keys)', () => {
    it('accepts sk_test_/sk_live_ keys with all scopes in their environment, in memory only', async () => {
      const sandbox = `sk_test_${'a1B2'.repeat(8)}`;
      const production = `sk_live_${'Z9y8'.repeat(4)}`; // 16 characters: the shortest accepted
      const { account, keys } = await open([sandbox, production]);
      expect(keys.size).to.equal(2);
      const s = keys.authenticate(sandbox)!;
      expect(s).to.deep.include({
        environment: 'sandbox',
        scopes: [...ALL_SCOPES],
        prefix: 'sk_test_',
        last4: 'a1B2',
        hash: sha256(sandbox),
        createdBy: 'VOUCHER_API_KEYS',
      });
      expect(keys.authenticate(production)!.environment).to.equal('production');
      expect(await account.events.readStream(API_KEYS_STREAM)).to.deep.equal([]);
    });

    const BAD: Array<[string, string]> = [
      ['another prefix', `pk_test_${'a'.repeat(32)}`],
      ['an unknown environment', `sk_prod_${'a'.repeat(32)}`],
      ['a random part of 15 characters', `sk_test_${'a'.repeat(15)}`],
      ['a random part of 129 characters', `sk_live_${'a'.repeat(129)}`],
      ['a character outside base62', `sk_test_${'a'.repeat(20)}-${'b'.repeat(11)}`],
      ['an inner space', `sk_test_${'a'.repeat(16)} ${'b'.repeat(16)}`],
      ['no random part', 'sk_test_'],
      ['nothing at all', ''],
    ];
    for (const [why, value] of BAD) {
      it(`refuses a value with ${why} at load, without echoing it`, async () => {
        const keys = new ApiKeyRegistry(undefined, clock);
        try {
          await keys.load([`sk_test_${'Good'.repeat(8)}`, value]);
          expect.fail(`loaded ${JSON.stringify(value)}`);
        } catch (error) {
          expect((error as Error).message).to.equal(
            'VOUCHER_API_KEYS holds a value that is not an sk_test_/sk_live_ key',
          );
          if (value.length > 8) expect((error as Error).message).to.not.include(value);
        }
      });
    }
  });

  describe('a second registry on the same store', () => {
    it('follow()s and sees a create and a revoke made by the first (one store object)', async () => {
      const { account, keys: first } = await open();
      const second = new ApiKeyRegistry(account.events, clock, account.kv);
      await second.load();
      const following = second.follow();
      try {
        const { key, record } = await first.create('production', 'seen elsewhere', ['vouchers:redeem']);
        await eventually(() => second.get(record.id) !== undefined);
        expect(second.get(record.id)).to.deep.equal(record);
        expect(second.authenticate(key)?.id).to.equal(record.id);

        await first.revoke(record.id, 'erin');
        await eventually(() => second.get(record.id)?.revokedAt !== undefined);
        expect(second.get(record.id)).to.deep.include({ revokedAt: '2026-03-10T08:30:15Z', revokedBy: 'erin' });
        expect(second.authenticate(key)).to.equal(undefined);
      } finally {
        await following?.close();
      }
    });

    it('follow()s another connection to the same file (as another process would write it)', async () => {
      const { keys: first } = await open();
      const before = await first.create('sandbox', 'before');
      const events = SqliteEventStore.open<ApiKeyEvent>(accountFiles(dir).events, { pollIntervalMs: 20 });
      const kv = SqliteKvStore.open(accountFiles(dir).kv, clock);
      const second = new ApiKeyRegistry(events, clock, kv);
      try {
        await second.load();
        expect(second.get(before.record.id)?.name).to.equal('before');
        const following = second.follow();
        try {
          const after = await first.create('sandbox', 'after');
          await first.revoke(before.record.id, 'frank');
          await eventually(
            () => second.get(after.record.id) !== undefined && second.get(before.record.id)?.revokedAt !== undefined,
          );
          expect(second.authenticate(after.key)?.name).to.equal('after');
          expect(second.authenticate(before.key)).to.equal(undefined);
          expect(second.get(before.record.id)?.revokedBy).to.equal('frank');
          expect(
            second
              .list()
              .map((r) => r.name)
              .sort(),
          ).to.deep.equal(['after', 'before']);
        } finally {
          await following?.close();
        }
      } finally {
        await events.close();
        await kv.close();
      }
    });
  });

  describe('load() after reopening', () => {
    it('restores every key with its record, revocations included', async () => {
      const first = await open();
      const live = await first.keys.create('sandbox', 'live', ['vouchers:read', 'vouchers:write'], 'gina');
      const gone = await first.keys.create('production', 'gone');
      clock.advance(5_000);
      await first.keys.revoke(gone.record.id, 'hank');
      const liveRecord = { ...live.record };
      await close(first.account);

      const reopened = await open();
      expect(reopened.keys.size).to.equal(2);
      expect(reopened.keys.get(live.record.id)).to.deep.equal(liveRecord);
      expect(reopened.keys.get(gone.record.id)).to.deep.include({
        revokedAt: '2026-03-10T08:30:20Z',
        revokedBy: 'hank',
        environment: 'production',
      });
      expect(reopened.keys.authenticate(live.key)?.scopes).to.deep.equal(['vouchers:read', 'vouchers:write']);
      expect(reopened.keys.authenticate(gone.key)).to.equal(undefined);
    });
  });

  describe('last use', () => {
    it('is recorded at once, written to the kv store at most once a minute per key, and survives a reopen', async () => {
      const first = await open();
      const { key, record } = await first.keys.create('sandbox', 'used');
      const other = await first.keys.create('sandbox', 'other');
      const stored = async (id: string) => first.account.kv.get<string>('key_last_used', id);
      expect(await stored(record.id)).to.equal(null);

      clock.set('2026-03-10T09:00:00Z');
      first.keys.authenticate(key);
      expect(first.keys.get(record.id)!.lastUsedAt).to.equal('2026-03-10T09:00:00Z');
      expect(await stored(record.id)).to.equal('2026-03-10T09:00:00Z');

      clock.set('2026-03-10T09:00:59Z'); // within the minute: in memory, not written
      first.keys.authenticate(key);
      expect(first.keys.get(record.id)!.lastUsedAt).to.equal('2026-03-10T09:00:59Z');
      expect(await stored(record.id)).to.equal('2026-03-10T09:00:00Z');

      first.keys.authenticate(other.key); // another key's throttle is its own
      expect(await stored(other.record.id)).to.equal('2026-03-10T09:00:59Z');

      clock.set('2026-03-10T09:01:01Z'); // after the minute: written
      first.keys.authenticate(key);
      expect(await stored(record.id)).to.equal('2026-03-10T09:01:01Z');

      clock.set('2026-03-10T09:01:30Z'); // within the next minute: not written
      first.keys.authenticate(key);
      expect(first.keys.get(record.id)!.lastUsedAt).to.equal('2026-03-10T09:01:30Z');
      expect(await stored(record.id)).to.equal('2026-03-10T09:01:01Z');

      first.keys.authenticate(`sk_test_${'N'.repeat(32)}`); // a failed attempt is no use
      await close(first.account);

      const reopened = await open();
      expect(reopened.keys.get(record.id)!.lastUsedAt).to.equal('2026-03-10T09:01:01Z');
      expect(reopened.keys.get(other.record.id)!.lastUsedAt).to.equal('2026-03-10T09:00:59Z');
      // the reopened registry writes the first use again at once
      clock.set('2026-03-10T09:01:40Z');
      reopened.keys.authenticate(key);
      expect(await reopened.account.kv.get<string>('key_last_used', record.id)).to.equal('2026-03-10T09:01:40Z');
    });

    it('is not recorded for a revoked key', async () => {
      const { account, keys } = await open();
      const { key, record } = await keys.create('sandbox', 'revoked');
      await keys.revoke(record.id);
      keys.authenticate(key);
      expect(keys.get(record.id)!.lastUsedAt).to.equal(undefined);
      expect(await account.kv.get('key_last_used', record.id)).to.equal(null);
    });
  });

  it('lists keys newest first, revoked ones included', async () => {
    const { keys } = await open();
    const a = await keys.create('sandbox', 'a');
    clock.advance(1_000);
    const b = await keys.create('production', 'b');
    clock.advance(1_000);
    const c = await keys.create('sandbox', 'c');
    await keys.revoke(b.record.id);
    expect(keys.list().map((r) => r.id)).to.deep.equal([c.record.id, b.record.id, a.record.id]);
    expect(keys.list()[1]!.revokedAt).to.be.a('string');
  });

  it('exports every scope of decisions.md, in its order', () => {
    const scopes: Scope[] = [
      'vouchers:read',
      'vouchers:write',
      'vouchers:delete',
      'vouchers:redeem',
      'analytics:read',
      'webhooks:manage',
    ];
    expect([...ALL_SCOPES]).to.deep.equal(scopes);
  });
});
