/**
 * A store's server cannot be reached (lost connection, no server selectable, shutting down):
 * the operation did not happen, or its outcome is unknown, and trying again later may succeed.
 * Adapters map their client's connection errors to it; the HTTP layer answers it with 503 and
 * `Retry-After`. `store` names the store ("mongodb", "eventstoredb", ...); `cause` is the
 * client's error.
 */
export class StoreUnavailableError extends Error {
  constructor(
    readonly store: string,
    cause?: unknown,
  ) {
    super(`${store} is unavailable`, { cause });
    this.name = 'StoreUnavailableError';
  }
}
