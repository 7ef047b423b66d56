import { expect } from 'chai';
import {
  AdminAuth,
  ADMIN_NAMESPACE,
  ADMIN_PASSWORD_KEY,
  generatePassword,
  hashPassword,
  verifyPassword,
  type PasswordHash,
} from '../../src/application/adminAuth.ts';
import { SqliteKvStore } from '../../src/infrastructure/kvStore/sqliteKvStore.ts';
import { FakeClock } from '../support/fakeClock.ts';

describe('operator password (AdminAuth)', () => {
  let kv: SqliteKvStore;
  const clock = new FakeClock();
  beforeEach(() => {
    kv = SqliteKvStore.open(':memory:', clock);
  });
  afterEach(async () => {
    await kv.close();
  });

  it('hashes with scrypt and a random salt, and verifies only the same password', async () => {
    const a = await hashPassword('s3cret password');
    const b = await hashPassword('s3cret password');
    expect(a.algorithm).to.equal('scrypt');
    expect(a.salt).not.to.equal(b.salt);
    expect(a.hash).not.to.equal(b.hash);
    expect(JSON.stringify(a)).not.to.contain('s3cret');
    expect(await verifyPassword('s3cret password', a)).to.equal(true);
    expect(await verifyPassword('s3cret passwor', a)).to.equal(false);
    expect(await verifyPassword('', a)).to.equal(false);
    expect(await verifyPassword('x'.repeat(5000), a)).to.equal(false);
  });

  it('generates readable passwords of 20 random characters', () => {
    const passwords = new Set(Array.from({ length: 50 }, generatePassword));
    expect(passwords.size).to.equal(50);
    for (const p of passwords) expect(p).to.match(/^[a-hjkmnp-z2-9]{5}(-[a-hjkmnp-z2-9]{5}){3}$/);
  });

  it('first start: generates a password, stores only its hash with no expiry, and hands it back once', async () => {
    const first = await AdminAuth.open(kv);
    expect(first.generated).to.be.a('string');
    const stored = await kv.get<PasswordHash>(ADMIN_NAMESPACE, ADMIN_PASSWORD_KEY);
    expect(stored).to.include({ algorithm: 'scrypt' });
    expect(JSON.stringify(stored)).not.to.contain(first.generated!);
    clock.advance(10 * 365 * 24 * 3600 * 1000);
    const second = await AdminAuth.open(kv);
    expect(second.generated).to.equal(undefined);
    expect(await second.auth.verify(first.generated!)).to.equal(true);
    expect(await second.auth.verify('something else')).to.equal(false);
  });

  it('ADMIN_PASSWORD wins over a stored password, and stores nothing', async () => {
    const { generated } = await AdminAuth.open(kv);
    const configured = await AdminAuth.open(kv, 'operator-chosen');
    expect(configured.generated).to.equal(undefined);
    expect(await configured.auth.verify('operator-chosen')).to.equal(true);
    expect(await configured.auth.verify(generated!)).to.equal(false);

    const fresh = SqliteKvStore.open(':memory:', clock);
    await AdminAuth.open(fresh, 'operator-chosen');
    expect(await fresh.get(ADMIN_NAMESPACE, ADMIN_PASSWORD_KEY)).to.equal(null);
    await fresh.close();
  });

  it('refuses to start on a damaged stored record rather than generating a new password over it', async () => {
    await kv.put(ADMIN_NAMESPACE, ADMIN_PASSWORD_KEY, { nonsense: true }, Number.MAX_SAFE_INTEGER);
    let error: unknown;
    try {
      await AdminAuth.open(kv);
    } catch (e) {
      error = e;
    }
    expect(String(error)).to.contain('ADMIN_PASSWORD');
  });
});
