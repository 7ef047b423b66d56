/**
 * Which B-trees a running service's commits write: a sampler of the WAL files of a DATA_DIR and a
 * report of what it saw, by file and B-tree (docs/benchmark.md, "Where the spread phase's drift
 * comes from").
 *
 *   tsx scripts/bench/walFrames.ts sample <DATA_DIR> <frames.jsonl> [interval ms, default 1000]
 *   tsx scripts/bench/walFrames.ts report <DATA_DIR> <frames.jsonl> [from ms] [to ms]
 *
 * `sample` reads every `*-wal` file under DATA_DIR each interval and appends one JSON line per file
 * with the frames committed since its last look: their count, the commits among them, and how many
 * times each page was written. A WAL started again from its beginning (new salts) is read from its
 * start; frames written and overwritten between two looks are not seen, so the counts are a sample.
 * It stops on SIGINT or SIGTERM.
 *
 * `report` maps each page number to its B-tree with SQLite's `dbstat` on the database files as
 * they are now (run it on a DATA_DIR the service has stopped using, before anything rebuilds a
 * file: a replay reassigns every page of the files it rebuilds) and prints, for the lines sampled
 * between `from` and `to` (epoch ms), the frames per B-tree, largest first.
 *
 * The WAL's layout (SQLite's file format): a 32-byte header (magic number, page size at byte 8,
 * salts at bytes 16 and 20), then frames of a 24-byte header (page number, the database's size in
 * pages on a commit's last frame, else 0, the two salts) and the page.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

export interface WalHeader {
  pageSize: number;
  salt1: number;
  salt2: number;
}

/** A WAL file's header, or undefined when the bytes are not one (too short, wrong magic number). */
export const walHeader = (bytes: Buffer): WalHeader | undefined => {
  if (bytes.length < WAL_HEADER_BYTES) return undefined;
  const magic = bytes.readUInt32BE(0);
  if (magic !== 0x377f0682 && magic !== 0x377f0683) return undefined;
  return { pageSize: bytes.readUInt32BE(8), salt1: bytes.readUInt32BE(16), salt2: bytes.readUInt32BE(20) };
};

export interface FrameCount {
  /** Frames read (each a page written once). */
  frames: number;
  /** Frames that end a commit. */
  commits: number;
  /** Times each page number was written. */
  pages: Map<number, number>;
}

/**
 * The frames in `bytes` (whole frames, from a frame's start), up to the first one whose salts are
 * not the header's: that one and those after it belong to an earlier run of the WAL.
 */
export const countFrames = (header: WalHeader, bytes: Buffer): FrameCount => {
  const size = FRAME_HEADER_BYTES + header.pageSize;
  const count: FrameCount = { frames: 0, commits: 0, pages: new Map() };
  for (let at = 0; at + size <= bytes.length; at += size) {
    if (bytes.readUInt32BE(at + 8) !== header.salt1 || bytes.readUInt32BE(at + 12) !== header.salt2) break;
    const page = bytes.readUInt32BE(at);
    count.pages.set(page, (count.pages.get(page) ?? 0) + 1);
    count.frames += 1;
    if (bytes.readUInt32BE(at + 4) !== 0) count.commits += 1;
  }
  return count;
};

const walFiles = (dir: string): string[] =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return walFiles(full);
    return entry.isFile() && entry.name.endsWith('-wal') ? [full] : [];
  });

/** One look at every WAL under `dir`: the frames each gained since `seen` (updated), as JSON lines. */
export const sampleOnce = (
  dir: string,
  seen: Map<string, { salts: string; frames: number }>,
  now: number,
): string[] => {
  const lines: string[] = [];
  for (const file of walFiles(dir)) {
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch {
      continue; // gone since the listing
    }
    try {
      const head = Buffer.alloc(WAL_HEADER_BYTES);
      const header = fs.readSync(fd, head, 0, WAL_HEADER_BYTES, 0) === WAL_HEADER_BYTES ? walHeader(head) : undefined;
      if (!header) continue;
      const salts = `${header.salt1}:${header.salt2}`;
      const known = seen.get(file);
      const from = known?.salts === salts ? known.frames : 0;
      const start = WAL_HEADER_BYTES + from * (FRAME_HEADER_BYTES + header.pageSize);
      const size = fs.fstatSync(fd).size;
      if (size <= start) {
        seen.set(file, { salts, frames: from });
        continue;
      }
      const bytes = Buffer.alloc(size - start);
      fs.readSync(fd, bytes, 0, bytes.length, start);
      const count = countFrames(header, bytes);
      seen.set(file, { salts, frames: from + count.frames });
      if (count.frames > 0)
        lines.push(
          JSON.stringify({
            t: now,
            file: path.relative(dir, file),
            frames: count.frames,
            commits: count.commits,
            pages: Object.fromEntries(count.pages),
          }),
        );
    } finally {
      fs.closeSync(fd);
    }
  }
  return lines;
};

interface SampleLine {
  t: number;
  file: string;
  frames: number;
  commits: number;
  pages: Record<string, number>;
}

/** Frames per `<file> <B-tree>` of the sampled lines, with `btreeOf` naming each page. */
export const framesByBtree = (
  lines: SampleLine[],
  btreeOf: (file: string, page: number) => string,
): Array<{ btree: string; frames: number }> => {
  const totals = new Map<string, number>();
  for (const line of lines)
    for (const [page, times] of Object.entries(line.pages)) {
      const key = `${line.file} ${btreeOf(line.file, Number(page))}`;
      totals.set(key, (totals.get(key) ?? 0) + times);
    }
  return [...totals]
    .map(([btree, frames]) => ({ btree, frames }))
    .sort((a, b) => b.frames - a.frames || a.btree.localeCompare(b.btree));
};

/** Each page's B-tree in a database file (`dbstat`); pages not in any: `(free)`. */
export const btreeNames = (dbFile: string): Map<number, string> => {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    const names = new Map<number, string>();
    for (const row of db.prepare('SELECT name, pageno FROM dbstat').iterate() as Iterable<{
      name: string;
      pageno: number;
    }>)
      names.set(row.pageno, row.name);
    return names;
  } finally {
    db.close();
  }
};

const main = (): void => {
  const [mode, dir, file, ...rest] = process.argv.slice(2);
  if ((mode !== 'sample' && mode !== 'report') || !dir || !file) {
    process.stderr.write('usage: walFrames.ts sample|report <DATA_DIR> <frames.jsonl> [...]\n');
    process.exit(2);
  }
  if (mode === 'sample') {
    const out = fs.openSync(file, 'a');
    const seen = new Map<string, { salts: string; frames: number }>();
    const timer = setInterval(
      () => {
        for (const line of sampleOnce(dir, seen, Date.now())) fs.writeSync(out, `${line}\n`);
      },
      Number(rest[0] ?? 1000),
    );
    const stop = () => {
      clearInterval(timer);
      fs.closeSync(out);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  const from = Number(rest[0] ?? 0);
  const to = Number(rest[1] ?? Number.MAX_SAFE_INTEGER);
  const lines = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as SampleLine)
    .filter((l) => l.t >= from && l.t < to);
  const names = new Map<string, Map<number, string>>();
  const btreeOf = (walFile: string, page: number) => {
    const db = walFile.replace(/-wal$/, '');
    if (!names.has(db)) names.set(db, btreeNames(path.join(dir, db)));
    return names.get(db)!.get(page) ?? '(free)';
  };
  const commits = new Map<string, number>();
  for (const line of lines) commits.set(line.file, (commits.get(line.file) ?? 0) + line.commits);
  for (const [walFile, n] of [...commits].sort((a, b) => b[1] - a[1]))
    process.stdout.write(`${walFile}: ${n} commits\n`);
  for (const { btree, frames } of framesByBtree(lines, btreeOf))
    process.stdout.write(`${String(frames).padStart(10)}  ${btree}\n`);
};

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
