/**
 * The one error type of the domain and application layers. `code` is the spec's error code;
 * http/errors.ts maps each code to its HTTP status. `details` has the spec's shape for the code.
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'VOUCHER_NOT_FOUND'
  | 'APPLICATION_NOT_FOUND'
  | 'VOUCHER_ALREADY_APPLIED'
  | 'VOUCHER_INVALID'
  | 'VOUCHER_EXPIRED'
  | 'USAGE_LIMIT_EXCEEDED'
  | 'INVALID_CONFIGURATION'
  | 'STACKING_CONFLICT'
  | 'CONDITION_NOT_MET'
  | 'DUPLICATE_VOUCHER_CODE'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'CONCURRENT_MODIFICATION'
  | 'INVALID_TIME_PERIOD'
  | 'EXPORT_FAILED'
  | 'EXPORT_NOT_FOUND'
  | 'EXPORT_NOT_READY'
  | 'EXPORT_EXPIRED'
  | 'QUOTA_EXCEEDED'
  | 'WEBHOOK_NOT_FOUND'
  | 'WEBHOOK_DELIVERY_NOT_FOUND';

export type ErrorDetails = Record<string, unknown> | Array<Record<string, unknown>>;

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
  }
}

/** The most `{field, message}` problems an INVALID_REQUEST lists; `detailsTotal` says how many there were. */
export const MAX_LISTED_PROBLEMS = 20;

export class InvalidRequestError extends DomainError {
  constructor(
    message: string,
    problems: Array<{ field: string; message: string }>,
    /** How many problems were found (problems beyond the first 20 are not listed); null: not all were looked for. */
    readonly detailsTotal: number | null,
  ) {
    super('INVALID_REQUEST', message, problems.slice(0, MAX_LISTED_PROBLEMS));
  }

  /** Whether `details` leaves problems out (more than 20 found, or not all looked for). */
  get truncated(): boolean {
    return this.detailsTotal === null || this.detailsTotal > (this.details as unknown[]).length;
  }
}

/**
 * 400 INVALID_REQUEST with one `{field, message}` detail per problem, at most 20 of them.
 * `total`: how many problems there are (default: all given); null when the caller stopped at the
 * first ones it found (a body too large to check whole).
 */
export const invalidRequest = (
  problems: Array<{ field: string; message: string }>,
  total: number | null = problems.length,
): DomainError => {
  const first = problems[0];
  const message =
    total === 1 && first
      ? `${first.field} ${first.message}`
      : total === null
        ? first
          ? `${first.field} ${first.message}; the body was not checked further`
          : 'The request is invalid'
        : total > MAX_LISTED_PROBLEMS
          ? `The request has ${total} problems; details lists the first ${MAX_LISTED_PROBLEMS}`
          : 'The request is invalid';
  return new InvalidRequestError(message, problems, total);
};
