/**
 * A decider: the whole behaviour of one kind of aggregate as three pure functions.
 * - `decide(command, state)` returns the events the command causes (or throws the domain error
 *   that rejects it); it never reads a clock or a random source: time and ids come on the command.
 * - `evolve(state, event)` folds one event into the state.
 * - `initialState()` is the state of a stream that has no events.
 * The command handler (commandHandler.ts) runs any decider against an event store.
 */
export interface Decider<Command, Event, State> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

/** The shape every event has: a type name and a JSON-serialisable payload. */
export interface DomainEvent<Type extends string = string, Data extends object = object> {
  type: Type;
  data: Data;
}

/** An event of no particular union (generic tooling: replay, contract tests). */
export type AnyEvent = DomainEvent<string, Record<string, unknown>>;
