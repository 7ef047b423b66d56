/**
 * The open-loop bench's line on how busy the machine was while each target ran
 * (scripts/bench/openLoopReport.ts, machineLoadLines): the target's process, the generator and every
 * other process together, over all the machine's CPUs, one line per rate.
 */
import { expect } from 'chai';
import { machineLoadLines, type OpenLoopRow } from '../../scripts/bench/openLoopReport.ts';

const row = (
  fraction: number,
  rate: number,
  id: OpenLoopRow['target']['id'],
  cpu: { server: number; generator: number; other: number },
) =>
  ({
    fraction,
    rate,
    target: { id, title: id },
    serverCpu: cpu.server,
    loadGenCpu: cpu.generator,
    otherCpu: cpu.other,
  }) as OpenLoopRow;

describe('bench: how busy the machine was during each target', () => {
  it('sums the service, the generator and the rest over all CPUs, one line per rate', () => {
    const rows = [
      row(0.25, 801, 'bare', { server: 0.27, generator: 0.38, other: 0.01 }),
      row(0.25, 801, 'apply', { server: 0.9, generator: 0.21, other: 0.01 }),
      row(0.5, 1602, 'bare', { server: 0.47, generator: 0.3, other: 0.03 }),
      row(0.5, 1602, 'durable', { server: 0.74, generator: 0.34, other: 0 }),
      row(0.5, 1602, 'apply', { server: 1.2, generator: 0.29, other: 0.04 }),
    ];
    expect(machineLoadLines(rows, 2)).to.deep.equal([
      "the machine's 2 CPUs busy during each target's rounds at 801 req/s (0.25×), with the generator and other processes: bare 33 %, apply 56 %",
      "the machine's 2 CPUs busy during each target's rounds at 1602 req/s (0.5×), with the generator and other processes: bare 40 %, durable 54 %, apply 77 %",
    ]);
  });

  it('divides by the CPUs the machine has', () => {
    const rows = [row(0.5, 1000, 'apply', { server: 1.2, generator: 0.4, other: 0.4 })];
    expect(machineLoadLines(rows, 4)).to.deep.equal([
      "the machine's 4 CPUs busy during each target's rounds at 1000 req/s (0.5×), with the generator and other processes: apply 50 %",
    ]);
  });
});
