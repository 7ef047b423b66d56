/**
 * The SQLite read store's bulk-write mode (ReadStore.bulkWrites, used by rebuilds): no fsync and a
 * large cache while the work runs, its usual settings back afterwards (also when the work fails),
 * and what was written checkpointed into the database file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { expect } from 'chai';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';

const SYNCHRONOUS = { OFF: 0, NORMAL: 1 };

describe('SqliteReadStore.bulkWrites', () => {
  let dir: string;
  let file: string;
  let store: SqliteReadStore;
  /** The store's own connection (synchronous and cache_size are per connection). */
  const pragma = (name: string) => (store as unknown as { db: Database.Database }).db.pragma(name, { simple: true });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bulk-writes-'));
    file = path.join(dir, 'read.db');
    store = SqliteReadStore.open(file);
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes without fsync and with a 64 MB cache, then restores the settings and checkpoints the WAL', async () => {
    const usual = { synchronous: pragma('synchronous'), cache: pragma('cache_size') };
    expect(usual.synchronous).to.equal(SYNCHRONOUS.NORMAL);
    const during = await store.bulkWrites(async () => {
      await store.writeBatch({
        upserts: Array.from({ length: 500 }, (_, i) => ({ collection: 'things', doc: { id: `t${i}`, n: i } })),
        checkpoint: { name: 'bulk', position: 500 },
      });
      return { synchronous: pragma('synchronous'), cache: pragma('cache_size') };
    });
    expect(during).to.deep.equal({ synchronous: SYNCHRONOUS.OFF, cache: -65_536 });
    expect({ synchronous: pragma('synchronous'), cache: pragma('cache_size') }).to.deep.equal(usual);
    expect(fs.statSync(`${file}-wal`).size, 'WAL copied into the database file and truncated').to.equal(0);
    expect(await store.count('things')).to.equal(500);
    expect(await store.getCheckpoint('bulk')).to.equal(500);
  });

  it('restores the settings when the work fails, and keeps what was committed before the failure', async () => {
    const failure = await store
      .bulkWrites(async () => {
        await store.writeBatch({ upserts: [{ collection: 'things', doc: { id: 'kept' } }] });
        await store.writeBatch({ upserts: [{ collection: 'things', doc: { id: '' } }] });
      })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(String(failure)).to.match(/id must be a non-empty string/);
    expect(pragma('synchronous')).to.equal(SYNCHRONOUS.NORMAL);
    expect(pragma('cache_size')).to.not.equal(-65_536);
    expect((await store.find('things')).map((d) => d.id)).to.deep.equal(['kept']);
  });

  it('builds the declared indexes of the collections empty at its start once the work is done, and keeps the others', async () => {
    const indexes = () =>
      (store as unknown as { db: Database.Database }).db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        .pluck()
        .all() as string[];
    await store.ensureIndex('things', ['n']);
    await store.ensureIndex('kept', ['n']);
    await store.writeBatch({ upserts: [{ collection: 'kept', doc: { id: 'k', n: 1 } }] });
    const before = indexes();
    expect(before).to.deep.equal(['ix_rm_kept(n)', 'ix_rm_things(n)']);
    const during = await store.bulkWrites(async () => {
      await store.writeBatch({
        upserts: Array.from({ length: 50 }, (_, i) => ({ collection: 'things', doc: { id: `t${i}`, n: i } })),
      });
      return indexes();
    });
    expect(during).to.deep.equal(['ix_rm_kept(n)']);
    expect(indexes()).to.deep.equal(before);
    expect(store.explainFind('things', { n: 7 }).join(' ')).to.include('ix_rm_things(n)');
    expect((await store.find('things', { n: 7 })).map((d) => d.id)).to.deep.equal(['t7']);

    // also when the work fails
    await store.reset(['things'], 'none');
    const failed = await store.bulkWrites(async () => Promise.reject(new Error('boom'))).catch((e: Error) => e);
    expect(String(failed)).to.include('boom');
    expect(indexes()).to.deep.equal(before);
  });
});
