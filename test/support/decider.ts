/**
 * Given/when/then for the voucher decider:
 *   given([created, applied]).when(applyCommand).then([...events])
 *   given([created]).when(command).thenThrows('VOUCHER_INVALID', { reason: 'inactive' })
 *   given([created, deactivated]).when(deactivate).thenNothing()
 * `given` events are folded with `evolve` from `initialState()` afresh for every assertion (the
 * state's Map collections are updated in place, so a folded state is never reused).
 */
import { expect } from 'chai';
import { DomainError, type ErrorCode } from '../../src/domain/errors.ts';
import type { VoucherCommand } from '../../src/domain/voucher/commands.ts';
import { decide } from '../../src/domain/voucher/decide.ts';
import type { VoucherEvent } from '../../src/domain/voucher/events.ts';
import { evolve, initialState, type VoucherState } from '../../src/domain/voucher/state.ts';

export const fold = (events: VoucherEvent[]): VoucherState => events.reduce(evolve, initialState());

const pick = (value: unknown, keys: string[]): Record<string, unknown> =>
  Object.fromEntries(keys.map((key) => [key, (value as Record<string, unknown> | null)?.[key]]));

export const given = (events: VoucherEvent[]) => ({
  when: (command: VoucherCommand) => {
    const run = (): VoucherEvent[] => decide(command, fold(events));
    return {
      /** The decided events, for assertions on a part of them. */
      run,
      then(expected: VoucherEvent[]): void {
        expect(run()).to.deep.equal(expected);
      },
      thenNothing(): void {
        expect(run()).to.deep.equal([]);
      },
      /** A DomainError with `code`; its details deep-include `details` (for array details, one item does). */
      thenThrows(code: ErrorCode, details?: Record<string, unknown>): DomainError {
        let decided: VoucherEvent[] | undefined;
        let thrown: unknown;
        try {
          decided = run();
        } catch (error) {
          thrown = error;
        }
        if (decided !== undefined) expect.fail(`expected DomainError ${code}, but decided ${JSON.stringify(decided)}`);
        expect(thrown).to.be.instanceOf(DomainError);
        const error = thrown as DomainError;
        expect(error.code, error.message).to.equal(code);
        if (details !== undefined) {
          const keys = Object.keys(details);
          if (Array.isArray(error.details)) expect(error.details.map((d) => pick(d, keys))).to.deep.include(details);
          else expect(error.details).to.deep.include(details);
        }
        return error;
      },
    };
  },
});
