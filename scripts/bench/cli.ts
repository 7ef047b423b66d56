/** The bench's options (see scripts/bench.ts), read once from the command line. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const HOST = '127.0.0.1';

const args = new Map(
  process.argv.slice(2).map((a) => {
    const arg = a.replace(/^--/, '');
    const at = arg.indexOf('=');
    return (at < 0 ? [arg, 'true'] : [arg.slice(0, at), arg.slice(at + 1)]) as [string, string];
  }),
);
export const DURATION_S = Number(args.get('duration') ?? 5);
/**
 * Unmeasured seconds of load before a scenario's first round (and before the ceiling's first run).
 * The JIT needs them: on this 2-core machine, with the load generator on the other core, the
 * service's validate went from about 900 to about 250 µs of CPU per request over its first
 * 10 seconds of load (TurboFan compiles on a background thread that competes for the cores), the
 * bare ceiling over its first 4. A shorter warm-up measures the compiler, not the service.
 */
export const WARMUP_S = Number(args.get('warmup') ?? 15);
export const CONNECTIONS = Number(args.get('connections') ?? 32);
export const ONLY = args.get('only')?.split(',');
export const PROFILE = args.has('profile');
/**
 * `--gc-trace` (open loop): the service (A) runs with V8's GC trace, and each target's main-thread
 * collections are summed per rate (scripts/bench/gcTrace.ts). Printing the trace costs the service
 * a little: its latencies are not comparable with a run without it.
 */
export const GC_TRACE = args.has('gc-trace');
/**
 * `--timeline` (open loop): service A's threads are read every 10 ms while its apply target runs,
 * and apply's worst stretches of 100 ms are printed with what each thread did then
 * (scripts/bench/timeline.ts), and with `--gc-trace` the main thread's collections in each. The
 * reading costs the generator a little CPU.
 */
export const TIMELINE = args.has('timeline');
export const KEEP_DATA = args.has('keep-data');
export const CEILING_ONCE = args.get('ceiling') === 'once';
/** Seconds of each re-measurement of the ceiling before a scenario (it is warm by then). */
export const RECHECK_S = Math.min(DURATION_S, 3);
/**
 * Rounds per scenario (`--rounds=N`, default 3): the scenario's DURATION_S is split into N
 * rounds, each right after an equally long run of the ceiling, and the ratio is the median of
 * the rounds' ratios. On a shared machine whose speed drifts from second to second, adjacent
 * short pairs compare like with like better than one long pair. `--rounds=1` is one pair.
 */
export const ROUNDS = Math.max(1, Math.floor(Number(args.get('rounds') ?? 3)));
export const SERVICE_ROOT = path.resolve(args.get('service-root') ?? ROOT);
/**
 * `--open-loop`: latency at a constant arrival rate instead of throughput at saturation (see
 * scripts/bench/openLoopRun.ts). The rates are fractions of apply's maximum measured in the same
 * run (`--rates=0.25,0.5`); each is offered for OPEN_LOOP_DURATION_S seconds per target, split
 * into ROUNDS rounds that alternate the targets.
 */
export const OPEN_LOOP = args.has('open-loop');
const fractions = (text: string): number[] => {
  const values = text.split(',').map(Number);
  if (values.some((v) => !(v > 0 && v <= 1)))
    throw new Error(`--rates takes fractions of apply's maximum in (0, 1], e.g. --rates=0.25,0.5; got ${text}`);
  return [...new Set(values)].sort((a, b) => a - b);
};
export const RATES = fractions(args.get('rates') ?? '0.25,0.5');
export const OPEN_LOOP_DURATION_S = Number(args.get('open-loop-duration') ?? 12);
/**
 * `--repeat=N` (open loop): N whole runs one after the other, each with fresh services and its own
 * closed loop, then a summary of every judged target's ratio over the runs (its median, and in how
 * many runs it was met). On a shared machine a tail's ratio moves by a factor of two or three from
 * one run of the same build to the next, so one run's verdict says little on its own.
 */
export const REPEAT = ((raw) => {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--repeat takes a whole number of runs, e.g. --repeat=5; got ${raw}`);
  return value;
})(args.get('repeat') ?? '1');
/**
 * `--apply-max=<req/s>`: the rates are fractions of this instead of apply's maximum measured in
 * the run, so that runs of an A/B series offer the same rates (the measured maximum moves by a
 * third from run to run on this machine). The closed loop still runs, as the warm-up.
 */
export const APPLY_MAX = ((raw) => {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!(value > 0))
    throw new Error(`--apply-max takes a rate in requests per second, e.g. --apply-max=2000; got ${raw}`);
  return value;
})(args.get('apply-max'));
/**
 * The open-loop generator opens a connection whenever every open one is busy, up to this many
 * (below the service's 1,000-connection limit). Reaching it means the generator, not the server,
 * set the pace: the run is reported as invalid.
 */
export const MAX_CONNECTIONS = Number(args.get('max-connections') ?? 512);
/**
 * `--open-loop-connections=per-round|kept` (open loop): `per-round`, the default, opens a new pool
 * of keep-alive connections for every round of every target, so each round's first requests also
 * open the connections they need; `kept` gives each target one pool for all its rounds, opened by
 * an unmeasured second at the first rate before the first round, as a checkout's HTTP client keeps
 * its connections between bursts of traffic. In the bench the two gave the same tail within the
 * noise (docs/benchmark.md, "Connections kept across rounds").
 */
export const OPEN_LOOP_CONNECTIONS = ((raw) => {
  if (raw !== 'kept' && raw !== 'per-round')
    throw new Error(`--open-loop-connections takes kept or per-round; got ${raw}`);
  return raw;
})(args.get('open-loop-connections') ?? 'per-round');
/**
 * `--open-loop-lead-in=<s>` (open loop): each round of each target first offers its rate for this
 * many seconds, on the same schedule, and keeps those requests out of its percentiles, as wrk2
 * leaves out its calibration period: a round then measures the load's steady state, not the first
 * seconds after the quiet spell that the targets' turns put before every round. The lead-in's own
 * percentiles are printed apart (default 0: no lead-in).
 */
export const OPEN_LOOP_LEAD_IN_S = ((raw) => {
  const value = Number(raw);
  if (!(value >= 0 && value <= 60)) throw new Error(`--open-loop-lead-in takes seconds from 0 to 60; got ${raw}`);
  return value;
})(args.get('open-loop-lead-in') ?? '0');
/**
 * `--b-env`'s `NAME=value` pairs, separated by commas. `DATA_DIR` is refused: the bench gives each
 * service a fresh data directory in every run and removes it after (`--b-data-under` says where B's
 * goes); a fixed one would carry one run's data into the next.
 */
export const parseBEnv = (raw: string): Record<string, string> =>
  Object.fromEntries(
    raw.split(',').map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`--b-env takes NAME=value pairs separated by commas, got "${pair}"`);
      const name = pair.slice(0, at);
      if (name === 'DATA_DIR')
        throw new Error('--b-env cannot set DATA_DIR: use --b-data-under=<dir> for where B keeps its data');
      return [name, pair.slice(at + 1)];
    }),
  );
/**
 * With --open-loop: a second service, B, measured in the same run and the same rounds as the
 * first (A), at the same rates: `--b-root=<dir>` runs it from another checkout (a change to
 * compare), `--b-env=NAME=value,...` with extra environment variables, `--b-data-under=<dir>` with
 * its data directory made (fresh in every run, removed after it) under `<dir>` instead of the
 * system's temporary directory: `/dev/shm` (tmpfs) runs the same build with no disk under its
 * files. Any one of them enables B.
 */
export const B_ROOT = args.has('b-root') ? path.resolve(args.get('b-root')!) : undefined;
export const B_ENV: Record<string, string> | undefined = args.has('b-env') ? parseBEnv(args.get('b-env')!) : undefined;
export const B_DATA_UNDER = args.has('b-data-under') ? path.resolve(args.get('b-data-under')!) : undefined;
/** Size of the analytics scenario's voucher (`--analytics-applications=1000000 --analytics-customers=10000`). */
export const ANALYTICS_APPLICATIONS = Number(args.get('analytics-applications') ?? 100_000);
export const ANALYTICS_CUSTOMERS = Number(args.get('analytics-customers') ?? 1_000);
/**
 * The service limits requests per API key and endpoint group (src/http/rateLimits.ts, read from
 * RATE_LIMITS in src/config.ts). The bench lifts the limits of the groups it uses instead of
 * turning the limiter off, so that the limiter's own cost is measured as in production.
 */
export const RATE_LIMITS =
  args.get('rate-limits') === 'off'
    ? 'off'
    : JSON.stringify({
        create: 1_000_000_000,
        validate: 1_000_000_000,
        apply: 1_000_000_000,
        read: 1_000_000_000,
        performance: 1_000_000_000,
        // the webhook scenario's endpoint changes and delivery polls (100 a minute in the spec)
        other: 1_000_000_000,
      });
/**
 * `--scale`: the scale bench (scripts/bench/scale.ts) instead of the scenarios: `--scale-applications`
 * applications over 1,000 vouchers, then as many on one voucher (default 1,000,000 each), a
 * restart, the disk used and a replay; `--scale-replays` replays of each checkout with --b-root.
 */
export const SCALE = args.has('scale');
export const SCALE_APPLICATIONS = Number(args.get('scale-applications') ?? 1_000_000);
if (SCALE && !(Number.isSafeInteger(SCALE_APPLICATIONS) && SCALE_APPLICATIONS >= 10))
  throw new Error(`--scale-applications takes a whole number of at least 10, got ${args.get('scale-applications')}`);
/**
 * Applications of the scale bench's reference round after each segment (`--scale-reference=N`,
 * default 20,000, at most a segment's; 0: none): the same applies on a fresh service with no
 * history, so that each segment's figures can be taken relative to the machine's speed at the
 * time (scripts/bench/scale.ts).
 */
export const SCALE_REFERENCE = Number(args.get('scale-reference') ?? 20_000);
if (SCALE && !(Number.isSafeInteger(SCALE_REFERENCE) && SCALE_REFERENCE >= 0))
  throw new Error(`--scale-reference takes a whole number (0: none), got ${args.get('scale-reference')}`);
/**
 * Slices of each scale-bench segment and of its reference round (`--scale-slices=N`, default 10):
 * the two services take turns slice by slice, so that both meet the machine alike
 * (scripts/bench/scale.ts).
 */
export const SCALE_SLICES = Number(args.get('scale-slices') ?? 10);
if (SCALE && !(Number.isSafeInteger(SCALE_SLICES) && SCALE_SLICES >= 1))
  throw new Error(`--scale-slices takes a whole number of at least 1, got ${args.get('scale-slices')}`);
export const SCALE_REPLAYS = Math.max(1, Math.floor(Number(args.get('scale-replays') ?? 2)));
/**
 * Restarts of the scale bench's service after the phases (`--scale-restarts=N`, default 3), each
 * followed by two applies on the hot voucher: the first apply's target holds for every restart.
 */
export const SCALE_RESTARTS = Number(args.get('scale-restarts') ?? 3);
if (SCALE && !(Number.isSafeInteger(SCALE_RESTARTS) && SCALE_RESTARTS >= 1))
  throw new Error(`--scale-restarts takes a whole number of at least 1, got ${args.get('scale-restarts')}`);
