import type { ErrorRequestHandler, Response } from 'express';
import { DomainError, InvalidRequestError, type ErrorCode } from '../domain/errors.ts';
import { QuotaExceededError } from '../application/quotas.ts';
import { StoreUnavailableError } from '../core/storeUnavailable.ts';

/** HTTP-only error codes, beyond the domain's. */
export type HttpErrorCode =
  | ErrorCode
  | 'NOT_FOUND'
  | 'MISSING_API_KEY'
  | 'INVALID_API_KEY'
  | 'INSUFFICIENT_PERMISSIONS'
  | 'RATE_LIMIT_EXCEEDED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INTERNAL_ERROR'
  | 'SERVICE_UNAVAILABLE';

const STATUS: Record<HttpErrorCode, number> = {
  INVALID_REQUEST: 400,
  VOUCHER_INVALID: 400,
  VOUCHER_EXPIRED: 400,
  USAGE_LIMIT_EXCEEDED: 400,
  INVALID_CONFIGURATION: 400,
  CONDITION_NOT_MET: 400,
  MISSING_API_KEY: 401,
  INVALID_API_KEY: 401,
  INSUFFICIENT_PERMISSIONS: 403,
  VOUCHER_NOT_FOUND: 404,
  APPLICATION_NOT_FOUND: 404,
  NOT_FOUND: 404,
  VOUCHER_ALREADY_APPLIED: 409,
  STACKING_CONFLICT: 409,
  DUPLICATE_VOUCHER_CODE: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  CONCURRENT_MODIFICATION: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMIT_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  INVALID_TIME_PERIOD: 400,
  EXPORT_NOT_FOUND: 404,
  EXPORT_NOT_READY: 409,
  EXPORT_EXPIRED: 410,
  EXPORT_FAILED: 500,
  QUOTA_EXCEEDED: 429,
  WEBHOOK_NOT_FOUND: 404,
  WEBHOOK_DELIVERY_NOT_FOUND: 404,
};

/** Retry-After (seconds) on a 503: long enough for a store server's restart or leader election. */
export const STORE_RETRY_AFTER_SECONDS = 5;

export const statusFor = (code: HttpErrorCode): number => STATUS[code] ?? 500;

export class HttpError extends Error {
  constructor(
    readonly code: HttpErrorCode,
    message: string,
    readonly details: unknown = {},
  ) {
    super(message);
  }
}

export const sendError = (
  res: Response,
  code: HttpErrorCode,
  message: string,
  details: unknown = {},
  /** INVALID_REQUEST whose details leave problems out: how many there were (null: not all looked for). */
  truncation?: { total: number | null },
): void => {
  const extra = truncation ? { details_truncated: true, details_total: truncation.total } : {};
  res.status(statusFor(code)).json({ error: { code, message, details, ...extra } });
};

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
  /** http-errors: true for a client error (4xx). */
  expose?: boolean;
}

/** A request body that is not JSON (or not an object or array at the top): 400, the field `body`. */
export const invalidJsonBody = (): HttpError =>
  new HttpError('INVALID_REQUEST', 'The request body is not valid JSON', [
    { field: 'body', message: 'is not valid JSON' },
  ]);

/** A body body-parser could not read (its Content-Encoding does not inflate it): 400, the field `body`. */
export const unreadableBody = (encoding = 'identity'): HttpError =>
  new HttpError('INVALID_REQUEST', 'The request body could not be read with its Content-Encoding', [
    { field: 'body', message: `could not be read with its Content-Encoding (${encoding.slice(0, 40)})` },
  ]);

/** A path whose parameter is not percent-encoded UTF-8: 400, the field `path` (before the key is checked). */
export const malformedPath = (): HttpError =>
  new HttpError('INVALID_REQUEST', 'The request path is not valid percent-encoded UTF-8', [
    { field: 'path', message: 'is not valid percent-encoded UTF-8' },
  ]);

/** A request body over the limit: 413 with `max_bytes`. */
export const bodyTooLarge = (maxBytes: number): HttpError =>
  new HttpError('PAYLOAD_TOO_LARGE', 'The request body is larger than 1 MB', { max_bytes: maxBytes });

/** Sends an error, and notes its code for the request log line (and the idempotency store). */
const send = (res: Response, error: HttpError | DomainError): void => {
  res.locals.errorCode = error.code;
  // A per-key quota says when a place frees up, as a 429 should.
  if (error instanceof QuotaExceededError) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  const truncation =
    error instanceof InvalidRequestError && error.truncated ? { total: error.detailsTotal } : undefined;
  sendError(res, error.code, error.message, error.details, truncation);
};

/**
 * The one place errors become responses: domain and HTTP errors keep their code and details,
 * body-parser failures become 400/413, an unreachable store server 503 SERVICE_UNAVAILABLE with
 * Retry-After, anything else is a 500 INTERNAL_ERROR carrying only the request id (the stack goes
 * to the log, never to the client).
 */
export const errorHandler: ErrorRequestHandler = (error: unknown, req, res, _next) => {
  if (error instanceof DomainError || error instanceof HttpError) return send(res, error);
  if (error instanceof StoreUnavailableError) {
    req.log?.warn({ err: error, store: error.store }, 'store unavailable');
    res.setHeader('Retry-After', String(STORE_RETRY_AFTER_SECONDS));
    return send(
      res,
      new HttpError('SERVICE_UNAVAILABLE', 'The service cannot reach its storage; retry after Retry-After seconds'),
    );
  }
  const parser = error as BodyParserError;
  if (parser.type === 'entity.too.large') return send(res, bodyTooLarge(parser.limit ?? 1_048_576));
  if (parser.type === 'entity.parse.failed') return send(res, invalidJsonBody());
  if (parser.type === 'encoding.unsupported' || parser.type === 'charset.unsupported') {
    return send(res, new HttpError('UNSUPPORTED_MEDIA_TYPE', 'The request body encoding is not supported', {}));
  }
  // Any other client error of body-parser's (http-errors, status 400): a compressed body that does not inflate.
  if (parser.status === 400 && parser.expose === true) return send(res, unreadableBody(req.get('Content-Encoding')));
  // The router decodes path parameters with decodeURIComponent: `%zz`, `%FF` or a lone surrogate's bytes throw.
  if (error instanceof URIError) return send(res, malformedPath());
  const requestId = String(req.requestId ?? '');
  res.locals.internalError = error;
  req.log?.error({ err: error, request_id: requestId }, 'unhandled error');
  return send(
    res,
    new HttpError('INTERNAL_ERROR', 'Something went wrong on our side; the request id identifies it in our logs', {
      request_id: requestId,
    }),
  );
};
