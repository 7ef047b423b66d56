import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { SqliteKvStore } from '../../src/infrastructure/kvStore/sqliteKvStore.ts';
import { FakeClock } from '../support/fakeClock.ts';

describe('SqliteKvStore', () => {
  let dir: string;
  let file: string;
  let clock: FakeClock;
  let kv: SqliteKvStore;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-'));
    file = path.join(dir, 'state.db');
    clock = new FakeClock('2026-03-01T00:00:00Z');
    kv = SqliteKvStore.open(file, clock, { relaxedNamespaces: ['quotes'] });
  });
  afterEach(async () => {
    await kv.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const now = () => clock.now().getTime();

  it('stores, reads and deletes JSON values until they expire', async () => {
    await kv.put('idempotency', 'k1', { status: 201, body: { id: 'v_1' } }, now() + 1_000);
    expect(await kv.get('idempotency', 'k1')).to.deep.equal({ status: 201, body: { id: 'v_1' } });
    expect(await kv.get('quotes', 'k1')).to.equal(null); // namespaces are apart
    clock.advance(1_000);
    expect(await kv.get('idempotency', 'k1')).to.equal(null);
    await kv.put('idempotency', 'k2', 'x', now() + 1_000);
    await kv.delete('idempotency', 'k2');
    expect(await kv.get('idempotency', 'k2')).to.equal(null);
  });

  it('putIfAbsent writes only over a missing or expired record', async () => {
    expect(await kv.putIfAbsent('admin', 'password', 'first', now() + 1_000)).to.equal(true);
    expect(await kv.putIfAbsent('admin', 'password', 'second', now() + 1_000)).to.equal(false);
    expect(await kv.get('admin', 'password')).to.equal('first');
    clock.advance(1_000);
    expect(await kv.putIfAbsent('admin', 'password', 'third', now() + 1_000)).to.equal(true);
    expect(await kv.get('admin', 'password')).to.equal('third');
  });

  it('purges expired records of every namespace and counts them', async () => {
    await kv.put('quotes', 'a', 1, now() + 10);
    await kv.put('idempotency', 'b', 2, now() + 10);
    await kv.put('idempotency', 'c', 3, now() + 10_000);
    expect(await kv.purgeExpired(now() + 10)).to.equal(2);
    expect(await kv.get('idempotency', 'c')).to.equal(3);
  });

  it('writes relaxed namespaces at synchronous=NORMAL and the rest at FULL, in the same file', async () => {
    expect(kv.synchronousOf('quotes')).to.equal(1);
    expect(kv.synchronousOf('idempotency')).to.equal(2);
    await kv.put('quotes', 'q', { order: { value: 100 } }, now() + 60_000);
    await kv.put('idempotency', 'i', 'kept', now() + 60_000);
    await kv.close();
    kv = SqliteKvStore.open(file, clock); // reopened without relaxed namespaces: one FULL connection
    expect(kv.synchronousOf('quotes')).to.equal(2);
    expect(await kv.get('quotes', 'q')).to.deep.equal({ order: { value: 100 } });
    expect(await kv.get('idempotency', 'i')).to.equal('kept');
  });

  describe('records of an owner, for per-key quotas', () => {
    const quota = (owner: string, limit: number) => ({ owner, limit });

    it('putOwned stores up to the limit of live records per owner, then refuses and says how many and until when', async () => {
      expect(await kv.putOwned('quotes', 'a', 1, now() + 1_000, quota('key_1', 2))).to.deep.equal({ stored: true });
      expect(await kv.putOwned('quotes', 'b', 2, now() + 2_000, quota('key_1', 2))).to.deep.equal({ stored: true });
      expect(await kv.putOwned('quotes', 'c', 3, now() + 3_000, quota('key_1', 2))).to.deep.equal({
        stored: false,
        count: 2,
        nextExpiresAt: now() + 1_000,
      });
      expect(await kv.get('quotes', 'c')).to.equal(null);
      // another owner, another namespace: counted apart
      expect(await kv.putOwned('quotes', 'c', 3, now() + 3_000, quota('key_2', 2))).to.include({ stored: true });
      expect(await kv.putOwned('exports', 'c', 3, now() + 3_000, quota('key_1', 2))).to.include({ stored: true });
    });

    it('replacing a live record of the same owner adds none; taking over another owner’s key counts', async () => {
      await kv.putOwned('quotes', 'a', 1, now() + 1_000, quota('key_1', 1));
      expect(await kv.putOwned('quotes', 'a', 'again', now() + 5_000, quota('key_1', 1))).to.deep.equal({
        stored: true,
      });
      expect(await kv.get('quotes', 'a')).to.equal('again');
      await kv.putOwned('quotes', 'b', 1, now() + 1_000, quota('key_2', 1));
      expect(await kv.putOwned('quotes', 'b', 2, now() + 1_000, quota('key_1', 1))).to.include({ stored: false });
      expect(await kv.get('quotes', 'b')).to.equal(1);
    });

    it('an expired record frees its place at once (before any purge)', async () => {
      await kv.putOwned('quotes', 'a', 1, now() + 1_000, quota('key_1', 1));
      expect(await kv.putOwned('quotes', 'b', 1, now() + 1_000, quota('key_1', 1))).to.include({ stored: false });
      clock.advance(1_000);
      expect(await kv.putOwned('quotes', 'b', 1, now() + 1_000, quota('key_1', 1))).to.deep.equal({ stored: true });
      expect(await kv.putOwned('quotes', 'c', 1, now() + 1_000, quota('key_1', 1))).to.deep.equal({
        stored: false,
        count: 1,
        nextExpiresAt: now() + 1_000,
      });
    });

    it('keeps each owner’s count of stored records in kv_owners through every kind of write', async () => {
      const db = new Database(file, { readonly: true });
      const counted = () =>
        db.prepare('SELECT namespace, owner, stored FROM kv_owners WHERE stored > 0 ORDER BY namespace, owner').all();
      const actual = () =>
        db
          .prepare(
            'SELECT namespace, owner, count(*) AS stored FROM kv WHERE owner IS NOT NULL GROUP BY namespace, owner ORDER BY namespace, owner',
          )
          .all();
      try {
        let seed = 7;
        const random = (n: number) => {
          seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
          return seed % n;
        };
        for (let i = 0; i < 400; i += 1) {
          const namespace = random(2) === 0 ? 'quotes' : 'exports';
          const key = `k${random(12)}`;
          const expiresAt = now() + 1 + random(3_000);
          switch (random(6)) {
            case 0:
              await kv.put(namespace, key, i, expiresAt);
              break;
            case 1:
              await kv.putIfAbsent(namespace, key, i, expiresAt);
              break;
            case 2:
              await kv.delete(namespace, key);
              break;
            case 3:
              clock.advance(random(500));
              if (random(4) === 0) await kv.purgeExpired(now());
              break;
            default:
              await kv.putOwned(namespace, key, i, expiresAt, quota(`key_${random(3)}`, 1 + random(6)));
          }
          expect(counted(), `after step ${i}`).to.deep.equal(actual());
        }
        expect(actual()).not.to.deep.equal([]);
      } finally {
        db.close();
      }
    });

    it('a plain put over an owned record leaves it owned by nobody; ownedKeys lists the live ones, earliest expiry first', async () => {
      await kv.putOwned('exports', 'x', 1, now() + 3_000, quota('key_1', 10));
      await kv.putOwned('exports', 'y', 1, now() + 1_000, quota('key_1', 10));
      await kv.putOwned('exports', 'z', 1, now() + 2_000, quota('key_1', 10));
      await kv.putOwned('exports', 'gone', 1, now() + 500, quota('key_1', 10));
      await kv.put('exports', 'z', 1, now() + 2_000);
      clock.advance(500);
      expect(await kv.ownedKeys('exports', 'key_1')).to.deep.equal([
        { key: 'y', expiresAt: now() + 500 },
        { key: 'x', expiresAt: now() + 2_500 },
      ]);
      expect(await kv.ownedKeys('exports', 'key_2')).to.deep.equal([]);
    });

    /** Closes the store, writes a new file with `sql` (an earlier build's), and opens the store on it. */
    const reopenOnFile = async (sql: string): Promise<void> => {
      await kv.close();
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir);
      const old = new Database(file);
      old.exec(sql);
      old.close();
      kv = SqliteKvStore.open(file, clock, { relaxedNamespaces: ['quotes'] });
    };

    it('opens a file written before owners existed, adding the column and keeping its records', async () => {
      await reopenOnFile(`CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        expires_at INTEGER NOT NULL, PRIMARY KEY (namespace, key)) WITHOUT ROWID;
        INSERT INTO kv VALUES ('quotes', 'q', '{"order":{"value":1}}', ${now() + 60_000});`);
      expect(await kv.get('quotes', 'q')).to.deep.equal({ order: { value: 1 } });
      expect(await kv.putOwned('quotes', 'r', 1, now() + 1_000, quota('key_1', 1))).to.include({ stored: true });
    });

    it('counts the owned records afresh at every open: a file from before kv_owners, or one written without the upserts', async () => {
      await reopenOnFile(`CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        expires_at INTEGER NOT NULL, owner TEXT, PRIMARY KEY (namespace, key)) WITHOUT ROWID;
        INSERT INTO kv VALUES ('quotes', 'a', '1', ${now() + 1_000}, 'key_1'), ('quotes', 'b', '1', ${now() + 2_000}, 'key_1'),
          ('quotes', 'c', '1', ${now() + 1_000}, NULL), ('exports', 'a', '1', ${now() + 1_000}, 'key_1');`);
      expect(await kv.putOwned('quotes', 'd', 1, now() + 1_000, quota('key_1', 2))).to.deep.equal({
        stored: false,
        count: 2,
        nextExpiresAt: now() + 1_000,
      });
      expect(await kv.putOwned('exports', 'd', 1, now() + 1_000, quota('key_1', 2))).to.deep.equal({ stored: true });
      await kv.close();
      // a build without the triggers' upserts writes to the file: its REPLACE deletes fire no trigger
      const older = new Database(file);
      older.prepare(`INSERT OR REPLACE INTO kv VALUES ('exports', 'a', '2', ${now() + 1_000}, 'key_1')`).run();
      expect(older.prepare("SELECT stored FROM kv_owners WHERE namespace = 'exports'").get()).to.deep.equal({
        stored: 3,
      });
      older.close();
      kv = SqliteKvStore.open(file, clock, { relaxedNamespaces: ['quotes'] }); // reopened: counted afresh
      expect(await kv.putOwned('exports', 'e', 1, now() + 1_000, quota('key_1', 3))).to.deep.equal({ stored: true });
      expect(await kv.putOwned('exports', 'f', 1, now() + 1_000, quota('key_1', 3))).to.include({
        stored: false,
        count: 3,
      });
      clock.advance(1_000);
      expect(await kv.putOwned('quotes', 'd', 1, now() + 1_000, quota('key_1', 2))).to.deep.equal({ stored: true });
    });
  });

  it('closes a file whose schema it cannot set up before it throws: no connection is left open on it', async () => {
    await kv.close();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir);
    const other = new Database(file);
    other.exec('CREATE TABLE kv (namespace TEXT, key TEXT, value TEXT, PRIMARY KEY (namespace, key))');
    other.close();
    expect(() => SqliteKvStore.open(file, clock)).to.throw(/expires_at/);
    // the last connection to a WAL file removes its -wal and -shm files when it closes; the
    // checkpointer's connection closes on its own thread, shortly after
    const deadline = Date.now() + 5_000;
    while (fs.existsSync(`${file}-wal`) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(fs.existsSync(`${file}-wal`)).to.equal(false);
    expect(fs.existsSync(`${file}-shm`)).to.equal(false);
    kv = SqliteKvStore.open(path.join(dir, 'fresh.db'), clock); // for afterEach
  });
});
