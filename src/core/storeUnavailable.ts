/** A store server that cannot be reached or did not answer in time; the HTTP layer answers 503. */
export class StoreUnavailableError extends Error {
  constructor(
    readonly store: string,
    cause?: unknown,
  ) {
    super(`${store} is unavailable`, { cause });
  }
}
