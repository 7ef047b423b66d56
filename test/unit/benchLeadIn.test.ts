/**
 * The open-loop bench's line on the lead-ins (scripts/bench/openLoopReport.ts, leadInLines): with
 * --open-loop-lead-in, each target's p99 and p99.9 over its rounds' lead-ins, one line per rate,
 * and nothing without a lead-in.
 */
import { expect } from 'chai';
import { leadInLines, type OpenLoopRow } from '../../scripts/bench/openLoopReport.ts';
import type { OpenLoopResult } from '../../scripts/bench/openLoop.ts';

const row = (fraction: number, rate: number, id: OpenLoopRow['target']['id'], leadIn: [number, number] | null) =>
  ({
    fraction,
    rate,
    target: { id, title: id },
    leadIn: leadIn === null ? null : ({ latency: { p99: leadIn[0], p999: leadIn[1] } } as OpenLoopResult),
  }) as OpenLoopRow;

describe("bench: the lead-ins kept out of the open loop's table", () => {
  it("prints each target's lead-in p99 and p99.9, one line per rate", () => {
    const rows = [
      row(0.25, 801, 'bare', [4.5, 9.25]),
      row(0.25, 801, 'apply', [31.4, 60]),
      row(0.5, 1602, 'bare', [12.75, 20.5]),
      row(0.5, 1602, 'apply', [48.2, 117.3]),
    ];
    expect(leadInLines(rows)).to.deep.equal([
      'the lead-ins at 801 req/s (0.25×), not in the table, p99 / p99.9 ms: bare 4.50 / 9.25, apply 31.4 / 60.0',
      'the lead-ins at 1602 req/s (0.5×), not in the table, p99 / p99.9 ms: bare 12.8 / 20.5, apply 48.2 / 117.3',
    ]);
  });

  it('prints nothing without a lead-in', () => {
    expect(leadInLines([row(0.5, 1602, 'bare', null), row(0.5, 1602, 'apply', null)])).to.deep.equal([]);
  });
});
