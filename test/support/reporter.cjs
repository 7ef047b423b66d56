// Mocha's spec reporter plus one plain closing line, "N passed, N failed", that CI reads.
'use strict';
const Mocha = require('mocha');

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    let passed = 0;
    let failed = 0;
    let pending = 0;
    runner.on(Mocha.Runner.constants.EVENT_TEST_PASS, () => {
      passed += 1;
    });
    runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, () => {
      failed += 1;
    });
    runner.on(Mocha.Runner.constants.EVENT_TEST_PENDING, () => {
      pending += 1;
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      // Tests that did not run (each says why above) get a line of their own: the last one stays plain.
      if (pending) process.stdout.write(`\n${pending} not run (pending)`);
      process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
    });
  }
}
module.exports = SpecWithTotals;
