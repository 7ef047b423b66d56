/** The WAL sampler of scripts/bench/walFrames.ts on a real SQLite file in WAL mode. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { btreeNames, countFrames, framesByBtree, sampleOnce, walHeader } from '../../scripts/bench/walFrames.ts';

describe('WAL frames sampler (bench tool)', () => {
  let dir: string;
  let db: Database.Database;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wal-frames-'));
    db = new Database(path.join(dir, 'x.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0'); // every frame stays in the WAL while the test reads it
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL); CREATE INDEX t_k ON t (k)');
  });
  afterEach(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const insert = (from: number, count: number) =>
    db.transaction(() => {
      for (let i = from; i < from + count; i += 1) db.prepare('INSERT INTO t (id, k) VALUES (?, ?)').run(i, `k${i}`);
    })();

  it('counts the frames and commits of a WAL, and stops at a frame of an earlier run', () => {
    insert(0, 10);
    insert(10, 10);
    const bytes = fs.readFileSync(path.join(dir, 'x.db-wal'));
    const header = walHeader(bytes)!;
    expect(header.pageSize).to.equal(db.pragma('page_size', { simple: true }));
    const count = countFrames(header, bytes.subarray(32));
    expect(count.commits).to.equal(4); // the table and the index (a commit each), then two inserts
    expect(count.frames).to.equal((bytes.length - 32) / (24 + header.pageSize));
    expect([...count.pages.values()].reduce((a, b) => a + b, 0)).to.equal(count.frames);
    // the second frame's salt changed: only the first counts
    const stale = Buffer.from(bytes.subarray(32));
    stale.writeUInt32BE(header.salt1 + 1, 24 + header.pageSize + 8);
    expect(countFrames(header, stale).frames).to.equal(1);
    expect(walHeader(Buffer.alloc(32))).to.equal(undefined);
    expect(walHeader(Buffer.alloc(8))).to.equal(undefined);
  });

  it('reports only the frames committed since its last look, by B-tree', () => {
    const seen = new Map<string, { salts: string; frames: number }>();
    const first = sampleOnce(dir, seen, 1).map((l) => JSON.parse(l) as { file: string; frames: number });
    expect(first).to.have.length(1);
    expect(first[0]!.file).to.equal('x.db-wal');
    expect(sampleOnce(dir, seen, 2)).to.deep.equal([]); // nothing committed since
    insert(0, 200);
    const lines = sampleOnce(dir, seen, 3).map((l) => JSON.parse(l) as Parameters<typeof framesByBtree>[0][number]);
    expect(lines).to.have.length(1);
    expect(lines[0]!.commits).to.equal(1);
    const names = btreeNames(path.join(dir, 'x.db'));
    const byBtree = framesByBtree(lines, (_file, page) => names.get(page) ?? '(free)');
    const btrees = byBtree.map((b) => b.btree);
    expect(btrees).to.include('x.db-wal t');
    expect(btrees).to.include('x.db-wal t_k');
    expect(byBtree.reduce((n, b) => n + b.frames, 0)).to.equal(lines[0]!.frames);
  });
});
