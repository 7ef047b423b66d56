/** How the fuzzer judges an answer (judge), and the findings it reports. */
import { POLLUTION_MARKER } from './hostile.ts';
import { HOST_MARKER, type FuzzRequest } from './requests.ts';
import { errorCodeOf, type Outcome } from './send.ts';

export type FindingKind =
  | '5xx'
  | 'unanswered'
  | 'dropped'
  | 'crash'
  | 'oversized-error'
  | 'error-shape'
  | 'leak'
  | 'not-closed'
  | 'control'
  | 'memory';

export interface Finding {
  kind: FindingKind;
  message: string;
  /** The generated request, for a finding about one (replay it by seed and index). */
  request?: RequestSummary;
  status?: number;
  code?: string;
  /** The answer's start, or the error. */
  answer?: string;
  /** The service's log lines about it (an unhandled error's message and stack). */
  log?: string[];
  /** The request id a 5xx answer names (its log lines are looked up after the run). */
  requestId?: string;
}

export interface RequestSummary {
  index: number;
  target: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  bodyBytes: number;
  tags: string[];
}

/** An error answer longer than this is a finding (the 340,000-item body answered 63 MB). */
export const MAX_ERROR_BYTES = 64 * 1024;

/** Node's limit on a request's line and headers together (http.maxHeaderSize). */
const MAX_HEADER_BYTES = 16 * 1024;

/** About what a request's line and headers take on the wire. */
const headerBytes = (request: FuzzRequest): number =>
  request.method.length +
  request.path.length +
  12 +
  Object.entries(request.headers).reduce(
    (sum, [name, value]) => sum + name.length + 4 + (Array.isArray(value) ? value.join(', ') : value).length,
    0,
  );

export const truncate = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;

const headerText = (headers: Record<string, string | string[]>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, truncate(Array.isArray(v) ? v.join(', ') : v, 120)]));

export const summarise = (request: FuzzRequest): RequestSummary => {
  const raw = request.raw?.toString('latin1');
  const body = request.body ?? request.raw;
  return {
    index: request.index,
    target: request.target,
    method: request.method,
    path: truncate(raw ? raw.split(/\r?\n/, 1)[0]! : request.path, 300),
    headers:
      Object.keys(request.headers).length > 40
        ? { headers: `${Object.keys(request.headers).length} headers` }
        : headerText(request.headers),
    body: body ? truncate(body.toString('utf8'), 300) : '',
    bodyBytes: body?.length ?? 0,
    tags: [...new Set(request.tags)],
  };
};

/** Whether a body is the spec's error: {"error": {code, message, details}}. */
const hasErrorShape = (body: string): boolean => {
  try {
    const { error } = JSON.parse(body) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    return typeof error?.code === 'string' && typeof error.message === 'string' && error.details !== undefined;
  } catch {
    return false;
  }
};

/** 500 EXPORT_FAILED is the spec's answer to an export of more than 100,000 rows (decisions.md). */
const documented5xx = (request: FuzzRequest, outcome: Outcome): boolean =>
  request.target === 'createExport' && outcome.status === 500 && errorCodeOf(outcome) === 'EXPORT_FAILED';

/**
 * What the fuzzer makes of one answer: the findings it gives (none for an answer that is fine).
 * Not findings: a raw request of malformed HTTP refused by closing the connection (Node does so
 * for CONNECT), a request whose line and headers pass Node's 16 KB limit reset before its 431 is
 * read (Node closes such connections at once), and the spec's 500 EXPORT_FAILED.
 */
export const judge = (request: FuzzRequest, outcome: Outcome, requestTimeoutMs: number): Finding[] => {
  const findings: Finding[] = [];
  const finding = (kind: FindingKind, message: string, requestId?: string) =>
    findings.push({
      kind,
      message,
      request: summarise(request),
      status: outcome.status,
      code: errorCodeOf(outcome),
      answer: truncate(outcome.error ?? outcome.body, 500),
      requestId,
    });
  if (outcome.status === undefined) {
    if (outcome.error === 'timeout') finding('unanswered', `no answer within ${requestTimeoutMs} ms`);
    else if (!request.raw && headerBytes(request) <= MAX_HEADER_BYTES)
      finding('dropped', `the connection ended without an answer (${outcome.error})`);
    return findings;
  }
  if (outcome.status >= 500 && !documented5xx(request, outcome)) {
    const requestId = /"request_id":"([^"]+)"/.exec(outcome.body)?.[1];
    finding('5xx', `answered ${outcome.status} ${errorCodeOf(outcome) ?? ''}`.trim(), requestId);
  }
  const api = !request.raw && request.path.startsWith('/v1');
  if (api && outcome.status >= 400 && outcome.bytes > MAX_ERROR_BYTES)
    finding('oversized-error', `an error answer of ${outcome.bytes} bytes (more than ${MAX_ERROR_BYTES})`);
  else if (
    api &&
    outcome.status >= 400 &&
    outcome.bytes > 0 &&
    request.method !== 'HEAD' &&
    !hasErrorShape(outcome.body)
  )
    finding('error-shape', `a ${outcome.status} whose body is not {"error": {code, message, details}}`);
  const sentTarget = request.raw ? request.raw.toString('latin1').split('\n', 1)[0]! : request.path;
  const sentText = `${sentTarget}\n${request.body?.toString('utf8') ?? ''}`;
  if (outcome.body.includes(HOST_MARKER) && !sentTarget.includes(HOST_MARKER))
    finding('leak', 'the answer repeats the Host / X-Forwarded-Host header');
  if (outcome.body.includes(POLLUTION_MARKER) && !sentText.includes(POLLUTION_MARKER))
    finding(
      'leak',
      `the answer shows "${POLLUTION_MARKER}", which only earlier requests sent (a polluted prototype or leaked state)`,
    );
  return findings;
};
