/**
 * `npm run bench`: throughput of the redemption endpoints against a bare-express ceiling.
 *
 * The service runs in a CHILD process (`node dist/src/main.js`, built first, as npm start runs it) on a fresh temp DATA_DIR,
 * so the load generator (autocannon, in this process) and the server do not share an event loop.
 * A bare express app with one JSON route (scripts/bench/ceiling.ts), also a child process, is
 * measured first with the same autocannon settings; every scenario is reported as a ratio to it.
 * The machine may be shared (other processes take CPU now and then, and its speed drifts), so a
 * scenario's measured seconds are split into rounds (3 by default), each right after an equally
 * long run of the (warm) ceiling; the reported ratio is the median of the rounds' ratios, and the
 * notes list each round's (--ceiling=once: one run against the first ceiling measurement).
 *
 * It is a report, not a test: the exit code is 0 even when a target is missed, and non-zero only
 * when the bench itself failed (a child did not start, setup requests failed, ...).
 * Results are also written to .bench/last.json.
 *
 * The parts are in scripts/bench/: cli.ts (these options), processes.ts (children, cleanup, exit
 * codes), scenarios.ts and vouchers.ts (what is measured, its setup), load.ts and cpu.ts (autocannon
 * runs, CPU counters), report.ts and profiling.ts (table, notes, .bench/last.json, --profile), run.ts.
 *
 * Options (after `npm run bench --`):
 *   --duration=<s>      measured seconds per scenario (default 5)
 *   --warmup=<s>        unmeasured seconds of load before each scenario and the first ceiling run
 *                       (default 15: the JIT needs about 10 s of load to settle here, see cli.ts)
 *   --connections=<n>   concurrent connections (default 32)
 *   --only=<ids>        comma-separated scenario ids (ceiling always runs), e.g. --only=apply-hot
 *   --profile           run the server child with --cpu-prof; a summary of the profile is printed
 *                       per scenario (the samples of its measured seconds; raw .cpuprofile files
 *                       are kept in .bench/prof/). Profiling slows the server: its req/s are not
 *                       comparable with a run without --profile.
 *   --keep-data         keep the service's DATA_DIR (its path is printed) for a look at the stores
 *   --service-root=<dir> run the service from another checkout (e.g. a git worktree with a change to
 *                       compare; it needs its node_modules); the ceiling and the bench stay here
 *   --rounds=<n>        rounds per scenario (default 3; 1 = one ceiling run, then one scenario run)
 *   --ceiling=once      measure the ceiling once, not before every scenario
 *   --rate-limits=off   run the service without its rate limiter (RATE_LIMITS=off). By default the
 *                       limiter runs, as in production, with limits far above what the bench sends.
 *   --open-loop         latency at a constant arrival rate instead (scripts/bench/openLoopRun.ts): apply's
 *                       maximum is measured closed-loop, then the bare route, validate and apply are
 *                       offered fixed fractions of it; latency from each request's scheduled time
 *   --rates=<f,...>     with --open-loop: the fractions of apply's maximum (default 0.25,0.5)
 *   --open-loop-duration=<s>  with --open-loop: seconds per target and rate (default 12, split in rounds)
 *   --max-connections=<n>     with --open-loop: the generator's connection cap (default 512)
 *   --repeat=<n>        with --open-loop: n whole runs, then each target's ratios over them (median, runs met)
 *   --b-root=<dir>, --b-env=NAME=value,..., --b-data-under=<dir>  with --open-loop: a second service B
 *                       (another checkout, other environment variables, or its data under another
 *                       directory such as /dev/shm) measured in the same rounds at the same rates
 *   --scale             the scale bench instead (scripts/bench/scale.ts): applications over 1,000
 *                       vouchers and on one voucher, per tenth the req/s, p99 and RSS, then a
 *                       restart's first apply on the hot voucher, the disk used and a replay's events/s
 *   --scale-applications=<n>  with --scale: applications per phase (default 1,000,000)
 *   --scale-replays=<n> with --scale and --b-root=<dir>: replays of each checkout, alternating (default 2)
 */
import { OPEN_LOOP, SCALE } from './bench/cli.ts';
import { mainOpenLoopRepeated } from './bench/openLoopRun.ts';
import { runBench } from './bench/processes.ts';
import { main } from './bench/run.ts';
import { mainScale } from './bench/scale.ts';

runBench(SCALE ? mainScale : OPEN_LOOP ? mainOpenLoopRepeated : main);
