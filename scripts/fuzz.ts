/**
 * `npm run fuzz`: hostile requests against a running service, seeded so that any of them can be
 * sent again.
 *
 * The service runs as a CHILD process (`node --import tsx src/main.ts`) on 127.0.0.1, a free port
 * and a fresh temp DATA_DIR, with a sandbox and a production key with every scope and a sandbox
 * key that may only redeem; a few vouchers (one of every type), an application and an export are
 * created first. Then, for `--duration` seconds or `--budget` requests, `--concurrency` clients
 * send generated requests to every operation of the OpenAPI document and a few other routes:
 * valid bodies and queries built from the schemas, mutated with huge arrays, deep nesting (also
 * with an Idempotency-Key), odd dates and numbers, odd Unicode, prototype keys; unreadable bodies,
 * other content types and encodings, long headers and URLs, malformed HTTP on a raw socket, odd
 * keys. Meanwhile slow and idle sockets wait to be closed by the server, and a control request
 * (production GET /v1/vouchers) is timed every half second against its latency before the run.
 *
 * Findings: a 5xx answer (but the spec's 500 EXPORT_FAILED for an export too large), a request
 * unanswered within --request-timeout or a connection ended without an answer, the service
 * exiting, an error answer over 64 KB or not in the spec's error shape, a Host header or a
 * prototype marker repeated in an answer, a slow socket still open at its deadline, a control
 * request that failed, RSS growth over --max-rss-growth. Each is printed with its seed and index;
 * `--replay=<index>` sends that request again against a fresh service and prints its answer.
 * The latency ratios and memory figures are reported, not judged (only the gross limits above).
 *
 * Exit code: 0 without findings, 1 with findings, 2 when the fuzzer itself could not run.
 * The report is also written to .fuzz/last.json. See docs/operations.md ("Fuzzing").
 *
 * Options (after `npm run fuzz --`):
 *   --seed=<n>             32-bit seed (default: random, printed)
 *   --duration=<s>         seconds of requests (default 60)
 *   --budget=<n>           at most this many requests (default: no limit but the duration)
 *   --concurrency=<n>      requests in flight (default 8)
 *   --without=<tags>       comma-separated tag prefixes to leave out (e.g. socket,odd-date/leap-second)
 *   --sockets=<n>          slow sockets opened at the start (default 12)
 *   --timeouts=short|default  short (default): the service gets 2 s headers / 4 s request /
 *                          6 s idle / 2 s keep-alive timeouts (HTTP_*_MS), so a short run sees
 *                          slow sockets closed; default: the service's own timeouts
 *   --socket-deadline=<s>  how long a slow socket may stay open (default 16: twice the idle
 *                          timeout and a margin; 75 with --timeouts=default)
 *   --request-timeout=<s>  how long a request may go unanswered (default 15)
 *   --max-rss-growth=<MB>  RSS growth of the service that fails the run (default 1024)
 *   --replay=<i,j,...>     send only these requests of the seed, one at a time, and print the answers
 *   --service-root=<dir>   run the service from another checkout (with its node_modules)
 *   --keep-data            keep the service's DATA_DIR (its path is printed)
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatReport } from './fuzz/report.ts';
import { fuzz, type FuzzOptions } from './fuzz/run.ts';
import { SHORT_TIMEOUTS, socketDeadlineFor, stopService, type Service } from './fuzz/service.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  strict: true,
  options: {
    seed: { type: 'string' },
    duration: { type: 'string', default: '60' },
    budget: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    without: { type: 'string', default: '' },
    sockets: { type: 'string', default: '12' },
    timeouts: { type: 'string', default: 'short' },
    'socket-deadline': { type: 'string' },
    'request-timeout': { type: 'string', default: '15' },
    'max-rss-growth': { type: 'string', default: '1024' },
    replay: { type: 'string' },
    'service-root': { type: 'string' },
    'keep-data': { type: 'boolean', default: false },
  },
});

const number = (name: string, raw: string | undefined, min: number): number => {
  const value = Number(raw);
  if (raw === undefined || !Number.isFinite(value) || value < min) {
    process.stderr.write(`fuzz: --${name} must be a number of at least ${min}, got "${raw}"\n`);
    process.exit(2);
  }
  return value;
};

if (values.timeouts !== 'short' && values.timeouts !== 'default') {
  process.stderr.write(`fuzz: --timeouts must be short or default, got "${values.timeouts}"\n`);
  process.exit(2);
}
const timeouts = values.timeouts === 'short' ? SHORT_TIMEOUTS : 'default';
const seed = values.seed === undefined ? (Math.random() * 2 ** 31) | 0 : number('seed', values.seed, -(2 ** 31)) | 0;

let service: Service | undefined;
const options: FuzzOptions = {
  seed,
  durationS: number('duration', values.duration, 1),
  budget: values.budget === undefined ? Infinity : number('budget', values.budget, 1),
  concurrency: Math.floor(number('concurrency', values.concurrency, 1)),
  without: values.without
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean),
  sockets: Math.floor(number('sockets', values.sockets, 0)),
  socketDeadlineMs:
    values['socket-deadline'] !== undefined
      ? number('socket-deadline', values['socket-deadline'], 1) * 1000
      : timeouts === 'default'
        ? 75_000
        : socketDeadlineFor(timeouts),
  requestTimeoutMs: number('request-timeout', values['request-timeout'], 1) * 1000,
  controlIntervalMs: 500,
  maxRssGrowthMb: number('max-rss-growth', values['max-rss-growth'], 1),
  timeouts,
  root: path.resolve(values['service-root'] ?? ROOT),
  keepData: values['keep-data'],
  replay: values.replay?.split(',').map((i) => Math.floor(number('replay', i, 0))),
  log: (line) => process.stdout.write(`${line}\n`),
  onService: (s) => {
    service = s;
  },
};

const stop = async (reason: string, code: number) => {
  process.stderr.write(`fuzz: ${reason}; stopping the service\n`);
  if (service) await stopService(service).catch(() => undefined);
  process.exit(code);
};
process.on('SIGINT', () => void stop('interrupted', 130));
process.on('SIGTERM', () => void stop('terminated', 143));
process.on('uncaughtException', (error) => void stop(`failed: ${error.stack ?? error.message}`, 2));
process.on('unhandledRejection', (error) => void stop(`failed: ${String(error)}`, 2));

process.stdout.write(
  `npm run fuzz: seed ${seed}, ${options.replay ? `replay of ${options.replay.join(', ')}` : `${options.durationS} s${Number.isFinite(options.budget) ? ` or ${options.budget} requests` : ''}, concurrency ${options.concurrency}`}\n`,
);
fuzz(options).then(
  (report) => {
    process.stdout.write(`${formatReport(report)}\n`);
    const dir = path.join(ROOT, '.fuzz');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'last.json'), JSON.stringify(report, null, 2));
    process.stdout.write(`report written to .fuzz/last.json\n`);
    process.exit(report.findings.length > 0 ? 1 : 0);
  },
  (error: unknown) => {
    process.stderr.write(`fuzz failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
