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

/** 400 INVALID_REQUEST with one `{field, message}` detail per problem. */
export const invalidRequest = (problems: Array<{ field: string; message: string }>): DomainError =>
  new DomainError(
    'INVALID_REQUEST',
    problems.length === 1 ? `${problems[0]!.field} ${problems[0]!.message}` : 'The request is invalid',
    problems,
  );
