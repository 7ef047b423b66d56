/**
 * Preloaded (`--require`) into the service by the open-loop bench's `--gc-trace`: runs one
 * scavenge as the service starts, then prints `GC_ANCHOR <ns>` with the machine's monotonic clock
 * (`process.hrtime.bigint()`, the same in every process). V8's trace of that scavenge, printed
 * just before, gives its time on the trace's clock (ms since the isolate started), so the bench
 * can place every later collection on its own clock (gcTrace.ts `isolateStartedAt`).
 */
const v8 = require('node:v8');
const vm = require('node:vm');

v8.setFlagsFromString('--expose-gc');
vm.runInNewContext('gc')({ type: 'minor' });
v8.setFlagsFromString('--no-expose-gc');
process.stdout.write(`GC_ANCHOR ${process.hrtime.bigint()}\n`);
