/**
 * What the filter of stored snapshot keys saves (decisions/079): the CPU per apply of the
 * snapshot store's part of an apply, with the filter and without, alternately in one process on
 * one file.
 *
 *   tsx scripts/bench/snapshotLookups.ts [keys per stream, default 300]
 *
 * The file (in a temporary directory, deleted afterwards) gets 1,000 streams with that many
 * orders each, two keys per order (`o:` and `a:`, as a voucher's snapshot has). Each "apply" then
 * looks up the two keys of a new order on the next stream in turn, as an apply does; each stream
 * saves the keys of its last 20 orders every 20 of its applies, as the scale bench's spread phase
 * does. Rounds of 20,000 applies alternate between a store with the filter and one without (both
 * on the file; the one with the filter does every save, being the file's one writer), after one
 * unmeasured round each, and the CPU time of each round is printed per apply, after the time the
 * filter took to be ready.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteSnapshotStore } from '../../src/infrastructure/snapshots/sqliteSnapshotStore.ts';

const STREAMS = 1_000;
const ROUND = 20_000;
const ROUNDS = 5;
const SAVE_EVERY = 20;
const VALUE = JSON.stringify({
  id: 'va_x',
  orderId: 'sc_1',
  discount: 1234,
  currency: 'EUR',
  fingerprint: 'x'.repeat(80),
});

const perStream = Number(process.argv[2] ?? 300);
if (!Number.isInteger(perStream) || perStream < 1) throw new Error('keys per stream: a positive integer');

const stream = (n: number) => `voucher-${String(n % STREAMS).padStart(4, '0')}`;
const orderKey = (n: number) => `o:sc_${n}`;
const applicationKey = (n: number) => `a:va_${(1e9 + n).toString(36)}0123456789abcdef`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snapshot-lookups-'));
const file = path.join(dir, 'snapshots.db');
try {
  await SqliteSnapshotStore.open(file).close();
  const db = new Database(file);
  db.transaction(() => {
    const value = db.prepare('INSERT INTO snapshot_values (value, revision) VALUES (?, 1)');
    const key = db.prepare('INSERT INTO snapshot_keys (stream, key, value_id) VALUES (?, ?, ?)');
    for (let n = 0; n < STREAMS * perStream; n++) {
      key.run(stream(n), orderKey(n), value.run(VALUE).lastInsertRowid);
      key.run(stream(n), applicationKey(n), value.run(VALUE).lastInsertRowid);
    }
  })();
  db.close();

  const opened = performance.now();
  const filtered = SqliteSnapshotStore.open(file);
  const unfiltered = SqliteSnapshotStore.open(file, { filterKeys: false });
  while (!filtered.filtering) await new Promise((resolve) => setTimeout(resolve, 5));
  const built = performance.now() - opened;
  let next = STREAMS * perStream;
  const revisions = new Map<string, number>();

  /** µs of CPU per apply over one round on `store`. */
  const round = async (store: SqliteSnapshotStore): Promise<number> => {
    const start = process.cpuUsage();
    for (let i = 0; i < ROUND; i++, next++) {
      const s = stream(next);
      await store.entries(s, [orderKey(next), applicationKey(next)]);
      if (Math.floor(next / STREAMS) % SAVE_EVERY === SAVE_EVERY - 1) {
        const base = revisions.get(s) ?? -1;
        const entries: Array<[string, unknown]> = [];
        for (let q = 0; q < SAVE_EVERY; q++)
          entries.push([orderKey(next - q * STREAMS), 'va'], [applicationKey(next - q * STREAMS), VALUE]);
        await filtered.save(s, base, base + SAVE_EVERY, { next }, entries);
        revisions.set(s, base + SAVE_EVERY);
      }
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / ROUND;
  };

  await round(filtered);
  await round(unfiltered);
  const withFilter: number[] = [];
  const without: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    withFilter.push(await round(filtered));
    without.push(await round(unfiltered));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const show = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');
  console.log(
    `${STREAMS * perStream * 2} keys in ${STREAMS} streams; the filter ready ${built.toFixed(0)} ms after the open`,
  );
  console.log('µs of CPU per apply, rounds alternating:');
  console.log(`  with the filter:    ${show(withFilter)} (median ${median(withFilter).toFixed(1)})`);
  console.log(`  without the filter: ${show(without)} (median ${median(without).toFixed(1)})`);
  await filtered.close();
  await unfiltered.close();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
