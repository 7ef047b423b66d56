import express, { type NextFunction, type Request, type Response } from 'express';
import { bodyTooLarge, HttpError, invalidJsonBody } from './errors.ts';

export const MAX_BODY_BYTES = 1_048_576;

/**
 * The deepest nesting of arrays and objects a body may have. Every body the API takes is at most
 * six levels deep (validation_rules[].rules[].registration_date.value); code that walks a body
 * recursively (the idempotency fingerprint, JSON.stringify, the schema validator) would overflow
 * the stack on a megabyte of `[[[[…`, so such a body is refused right after it is parsed.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * Whether the JSON text `text` nests arrays and objects more than `max` levels deep: one pass
 * over the characters, skipping strings. About 2 ms per megabyte, where walking the parsed value
 * of a megabyte of `{},{},…` took 25 to 80 ms.
 */
export const textNestedDeeperThan = (text: string, max: number): boolean => {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i += 1; // backslash: the escaped character is part of the string
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth += 1;
      if (depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth -= 1;
  }
  return false;
};

/** The same for a parsed value (bodies body-parser read): iterative, stops at the first. */
export const nestedDeeperThan = (value: unknown, max: number): boolean => {
  if (value === null || typeof value !== 'object') return false;
  const containers: object[] = [value];
  const depths: number[] = [1];
  while (containers.length > 0) {
    const next = containers.pop()!;
    const depth = depths.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(next) ? next : Object.values(next)) {
      if (child !== null && typeof child === 'object') {
        containers.push(child as object);
        depths.push(depth + 1);
      }
    }
  }
  return false;
};

const tooDeep = (): HttpError =>
  new HttpError('INVALID_REQUEST', `The request body is nested more than ${MAX_BODY_DEPTH} levels deep`, [
    { field: 'body', message: `is nested more than ${MAX_BODY_DEPTH} levels deep` },
  ]);

/** Passes a body body-parser parsed on, or refuses it when it is nested too deep. */
const checked = (req: Request, next: NextFunction) => (error?: unknown) => {
  if (error) next(error);
  else if (nestedDeeperThan(req.body, MAX_BODY_DEPTH)) next(tooDeep());
  else next();
};

/** body-parser, for what the plain reader below leaves to it (compressed bodies, other charsets). */
const bodyParserJson = express.json({ limit: MAX_BODY_BYTES, strict: true, type: 'application/json' });

const UTF8 = /;\s*charset\s*=\s*"?utf-?8"?\s*(?:;|$)/i;

/** Whether the request carries a body: chunked, or a Content-Length above 0. */
export const hasBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * The JSON body as `req.body`, with body-parser's outcomes (strict: an object or array at the
 * top; 413 over 1 MB; 400 for unparseable JSON) but read with the platform on the common path.
 * body-parser costs about 30 µs more per request here (it parses the content type again, decodes
 * through iconv-lite and hooks on-finished/unpipe); checkouts send plain UTF-8 JSON, so those
 * bodies are read directly, and anything else (Content-Encoding gzip/deflate/br, a charset other
 * than UTF-8) goes to body-parser itself, which inflates or rejects it as before.
 * Runs after `requireJson`, so a body here is declared as application/json.
 */
export const parseJsonBody = (req: Request, res: Response, next: NextFunction): void => {
  if (!hasBody(req)) {
    next();
    return;
  }
  const { headers } = req;
  const length = headers['content-length'];
  const type = headers['content-type'] ?? '';
  const encoding = headers['content-encoding'];
  if (
    (encoding !== undefined && encoding.toLowerCase() !== 'identity') ||
    (type.includes(';') && /charset/i.test(type) && !UTF8.test(type))
  ) {
    bodyParserJson(req, res, checked(req, next));
    return;
  }
  if (length !== undefined && Number(length) > MAX_BODY_BYTES) {
    tooLarge(req, next);
    return;
  }
  // Listeners are inline and never removed: a request emits nothing after 'end' or 'error'.
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  req.on('data', (chunk: Buffer) => {
    if (settled) return; // over the limit: drained, not kept
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) {
      chunks.push(chunk);
      return;
    }
    settled = true;
    tooLarge(req, next);
  });
  req.on('end', () => {
    if (settled) return;
    settled = true;
    bodyRead(req, chunks, size, next);
  });
  // A client that hangs up mid-body: ECONNRESET ("aborted"); nobody is left to read the answer.
  req.on('error', (error: NodeJS.ErrnoException) => {
    if (settled) return;
    settled = true;
    next(
      error.code === 'ECONNRESET'
        ? new HttpError('INVALID_REQUEST', 'The request was aborted before its body arrived', [
            { field: 'body', message: 'is incomplete' },
          ])
        : error,
    );
  });
};

function bodyRead(req: Request, chunks: Buffer[], size: number, next: NextFunction): void {
  const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
  let body: unknown;
  try {
    body = parseStrict(text);
  } catch {
    next(invalidJsonBody());
    return;
  }
  if (textNestedDeeperThan(text, MAX_BODY_DEPTH)) {
    next(tooDeep());
    return;
  }
  req.body = body;
  next();
}

/** body-parser's strict mode: the first non-blank character opens an object or an array. */
const parseStrict = (text: string): unknown => {
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') throw new SyntaxError('not an object or array');
  return JSON.parse(text);
};

/** 413, and the rest of the body is drained (not buffered) so the answer reaches the client. */
const tooLarge = (req: Request, next: NextFunction): void => {
  req.resume(); // flowing already when called from 'data'; the listener ignores the rest
  next(bodyTooLarge(MAX_BODY_BYTES));
};
