/**
 * SqliteSnapshotStore's file: cores in snapshot_cores, entries as keys in snapshot_keys pointing
 * at values in snapshot_values; a file written by an earlier build (`snapshots` and one
 * `snapshot_entries` table) is moved into them when it opens, losing nothing, and an earlier build
 * given the file back finds no core whose entries it cannot read.
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { SqliteSnapshotStore } from '../../src/infrastructure/snapshots/sqliteSnapshotStore.ts';
import { tempFileEach } from '../support/tempFiles.ts';

const OLD_SCHEMA = `
CREATE TABLE snapshots (stream TEXT PRIMARY KEY, revision INTEGER NOT NULL, core TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE snapshot_entries (
  stream TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, revision INTEGER NOT NULL,
  PRIMARY KEY (stream, key)
) WITHOUT ROWID;
`;

describe('SqliteSnapshotStore file', () => {
  const file = tempFileEach('snapshot-file-', 'snapshots.db');

  const tables = (): string[] => {
    const db = new Database(file(), { readonly: true });
    try {
      return db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
    } finally {
      db.close();
    }
  };

  /** The rows of the values table: one per key ever written. */
  const valueRows = (): number => {
    const db = new Database(file(), { readonly: true });
    try {
      return db.prepare('SELECT count(*) FROM snapshot_values').pluck().get() as number;
    } finally {
      db.close();
    }
  };

  it('moves the entries of an earlier build into keys and values, with their revisions, and drops the old tables', async () => {
    const old = new Database(file());
    old.exec(OLD_SCHEMA);
    old.prepare('INSERT INTO snapshots VALUES (?, ?, ?)').run('voucher-a', 7, '{"id":"a"}');
    const entry = old.prepare('INSERT INTO snapshot_entries VALUES (?, ?, ?, ?)');
    entry.run('voucher-a', 'o:1', '"va_1"', 3);
    entry.run('voucher-a', 'c:x', '2', 7);
    entry.run('voucher-b', 'o:1', '"va_9"', 5);
    old.close();

    const store = SqliteSnapshotStore.open(file());
    try {
      expect(await store.load('voucher-a')).to.deep.equal({ revision: 7, core: { id: 'a' } });
      const a = await store.entries('voucher-a', ['o:1', 'c:x', 'o:2']);
      expect([...a]).to.deep.equal([
        ['o:1', { value: 'va_1', revision: 3 }],
        ['c:x', { value: 2, revision: 7 }],
      ]);
      expect([...(await store.entries('voucher-b', ['o:1']))]).to.deep.equal([['o:1', { value: 'va_9', revision: 5 }]]);
      // a migrated key takes a new value in place; a new key gets a value of its own
      expect(
        await store.save('voucher-a', 7, 9, { id: 'a' }, [
          ['c:x', 3],
          ['o:2', 'va_2'],
        ]),
      ).to.equal(true);
      expect([...(await store.entries('voucher-a', ['c:x', 'o:2', 'o:1']))]).to.deep.equal([
        ['c:x', { value: 3, revision: 9 }],
        ['o:2', { value: 'va_2', revision: 9 }],
        ['o:1', { value: 'va_1', revision: 3 }],
      ]);
    } finally {
      await store.close();
    }
    expect(tables()).to.deep.equal(['snapshot_cores', 'snapshot_keys', 'snapshot_values']);
  });

  it('closes a file it cannot use before it throws: no connection is left open on it', async () => {
    const other = new Database(file());
    other.exec('CREATE TABLE snapshot_values (id INTEGER PRIMARY KEY, other TEXT)');
    other.close();
    expect(() => SqliteSnapshotStore.open(file())).to.throw(/value/);
    // the last connection to a WAL file removes its -wal and -shm files when it closes; the
    // checkpointer's connection closes on its own thread, shortly after
    const deadline = Date.now() + 5_000;
    while (fs.existsSync(`${file()}-wal`) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(fs.existsSync(`${file()}-wal`)).to.equal(false);
    expect(fs.existsSync(`${file()}-shm`)).to.equal(false);
  });

  it('keeps one value per key: rewriting a key does not add a value row', async () => {
    const store = SqliteSnapshotStore.open(file());
    try {
      await store.save('voucher-a', -1, 1, {}, [['o:1', 'first']]);
      await store.save('voucher-a', 1, 2, {}, [
        ['o:1', 'second'],
        ['o:2', null],
      ]);
      expect([...(await store.entries('voucher-a', ['o:1', 'o:2']))]).to.deep.equal([
        ['o:1', { value: 'second', revision: 2 }],
        ['o:2', { value: null, revision: 2 }],
      ]);
    } finally {
      await store.close();
    }
    expect(valueRows()).to.equal(2);
  });

  for (const writer of ['inline', 'thread'] as const) {
    it(`rewrites a key written before, by the same store or before the file was opened again, in place: the filter of stored keys marks it (writer: ${writer})`, async () => {
      const first = SqliteSnapshotStore.open(file(), { writer });
      try {
        expect(await first.save('voucher-a', -1, 1, {}, [['c:1', 1]])).to.equal(true);
        expect(
          await first.save('voucher-a', 1, 2, {}, [
            ['c:1', 2],
            ['c:2', 1],
          ]),
        ).to.equal(true);
      } finally {
        await first.close();
      }
      const store = SqliteSnapshotStore.open(file(), { writer });
      try {
        expect(store.filtering).to.equal(true);
        expect(
          await store.save('voucher-a', 2, 3, {}, [
            ['c:1', 3],
            ['c:3', 1],
          ]),
        ).to.equal(true);
        expect([...(await store.entries('voucher-a', ['c:1', 'c:2', 'c:3']))]).to.deep.equal([
          ['c:1', { value: 3, revision: 3 }],
          ['c:2', { value: 1, revision: 2 }],
          ['c:3', { value: 1, revision: 3 }],
        ]);
      } finally {
        await store.close();
      }
      expect(valueRows()).to.equal(3);
    });
  }

  it('after going back to an earlier build and forward again, keeps the snapshots the earlier build wrote last', async () => {
    const first = SqliteSnapshotStore.open(file());
    await first.save('voucher-a', -1, 1, { by: 'new' }, [
      ['o:1', 'new build'],
      ['o:2', 'new build'],
    ]);
    await first.close();
    // the earlier build finds no core it cannot read the entries of: it folds the stream and snapshots again
    const old = new Database(file());
    old.exec(OLD_SCHEMA);
    expect(old.prepare('SELECT count(*) FROM snapshots').pluck().get()).to.equal(0);
    old.prepare('INSERT INTO snapshots VALUES (?, ?, ?)').run('voucher-a', 4, '{"by":"earlier"}');
    old.prepare('INSERT INTO snapshot_entries VALUES (?, ?, ?, ?)').run('voucher-a', 'o:1', '"earlier build"', 4);
    old.close();

    const store = SqliteSnapshotStore.open(file());
    try {
      expect(await store.load('voucher-a')).to.deep.equal({ revision: 4, core: { by: 'earlier' } });
      expect([...(await store.entries('voucher-a', ['o:1', 'o:2']))]).to.deep.equal([
        ['o:1', { value: 'earlier build', revision: 4 }],
      ]);
    } finally {
      await store.close();
    }
    expect(tables()).to.deep.equal(['snapshot_cores', 'snapshot_keys', 'snapshot_values']);
  });
});
