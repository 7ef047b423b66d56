/**
 * Given/when/then for any decider (src/core/decider.ts):
 *   const { given, fold } = deciderSpecification(voucherDecider);
 *   given([created, applied]).when(applyCommand).then([...events])
 *   given([created]).when(command).thenThrows('VOUCHER_INVALID', { reason: 'inactive' })
 *   given([created, deactivated]).when(deactivate).thenNothing()
 * `given` events are folded with `evolve` from `initialState()` afresh for every assertion (a
 * state may hold Map collections that `evolve` updates in place, so a folded state is never reused).
 */
import { expect } from 'chai';
import type { Decider } from '../../src/core/decider.ts';
import { DomainError, type ErrorCode } from '../../src/domain/errors.ts';

const pick = (value: unknown, keys: string[]): Record<string, unknown> =>
  Object.fromEntries(keys.map((key) => [key, (value as Record<string, unknown> | null)?.[key]]));

export interface WhenStep<Event> {
  /** The decided events, for assertions on a part of them. */
  run(): Event[];
  /** The decided events deep-equal `expected`. */
  then(expected: Event[]): void;
  /** The command decides no events. */
  thenNothing(): void;
  /** A DomainError with `code`; its details deep-include `details` (for array details, one item does). */
  thenThrows(code: ErrorCode, details?: Record<string, unknown>): DomainError;
}

export interface DeciderSpecification<Command, Event, State> {
  /** The state `events` fold into, from a fresh `initialState()`. */
  fold(events: Event[]): State;
  given(events: Event[]): { when(command: Command): WhenStep<Event> };
}

export const deciderSpecification = <Command, Event, State>(
  decider: Decider<Command, Event, State>,
): DeciderSpecification<Command, Event, State> => {
  const fold = (events: Event[]): State => events.reduce(decider.evolve, decider.initialState());
  const given = (events: Event[]) => ({
    when(command: Command): WhenStep<Event> {
      const run = (): Event[] => decider.decide(command, fold(events));
      return {
        run,
        then(expected: Event[]): void {
          expect(run()).to.deep.equal(expected);
        },
        thenNothing(): void {
          expect(run()).to.deep.equal([]);
        },
        thenThrows(code: ErrorCode, details?: Record<string, unknown>): DomainError {
          let decided: Event[] | undefined;
          let thrown: unknown;
          try {
            decided = run();
          } catch (error) {
            thrown = error;
          }
          if (decided !== undefined)
            expect.fail(`expected DomainError ${code}, but decided ${JSON.stringify(decided)}`);
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
  return { fold, given };
};
