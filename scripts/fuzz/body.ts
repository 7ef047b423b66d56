/**
 * Turns a generated request's JSON value into the bytes sent: `JSON.stringify`, with each splice
 * (hostile.ts) written in as raw text sized to the room left under the body limit, and every
 * `@@ref:<kind>:<n>@@` replaced by a real id or code of the service under test (setup.ts).
 */
import { isSplice, type Splice } from './hostile.ts';

/** The service's body limit (src/http/body.ts MAX_BODY_BYTES). */
export const MAX_BODY_BYTES = 1_048_576;

/** An own, enumerable member even for `__proto__` (an assignment would set the prototype instead). */
export const setOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
};

const MARKER = /"@@splice:(\d+)@@"/g;

/** `value` with every splice replaced by a marker string; the splices in marker order. */
const withMarkers = (value: unknown, splices: Splice[]): unknown => {
  if (isSplice(value)) {
    splices.push(value);
    return `@@splice:${splices.length - 1}@@`;
  }
  if (Array.isArray(value)) return value.map((v) => withMarkers(v, splices));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, k, withMarkers(v, splices));
    return out;
  }
  return value;
};

const spliceText = (splice: Splice, room: number): string => {
  switch (splice.splice) {
    case 'raw':
      return splice.text;
    case 'array': {
      const count =
        splice.count ?? Math.max(1, Math.floor(((splice.fill ?? 1) * room - 2) / (splice.element.length + 1)));
      return `[${Array.from({ length: count }, () => splice.element).join(',')}]`;
    }
    case 'deep': {
      const depth = Math.max(
        1,
        Math.floor((splice.fill * room - splice.leaf.length) / (splice.open.length + splice.close.length)),
      );
      return splice.open.repeat(depth) + splice.leaf + splice.close.repeat(depth);
    }
  }
};

/** The JSON text of `value`, splices written in; sized splices share the room left under the limit. */
export const serialise = (value: unknown): string => {
  const splices: Splice[] = [];
  const text = JSON.stringify(withMarkers(value, splices)) ?? 'null';
  if (splices.length === 0) return text;
  const sized = splices.filter((s) => s.splice === 'deep' || (s.splice === 'array' && s.count === undefined)).length;
  const room = Math.max(0, MAX_BODY_BYTES - text.length) / Math.max(1, sized);
  return text.replace(MARKER, (_, k: string) => spliceText(splices[Number(k)]!, room));
};

/** What `@@ref:<kind>:<n>@@` stands for: the n-th (modulo) of the service's ids of that kind. */
export type Refs = Record<string, string[]>;

const REF = /@@ref:([a-z]+):(\d+)@@/g;

/** `text` with every reference replaced (an unknown kind, or none of it: `unknown`). */
export const resolveRefs = (text: string, refs: Refs): string =>
  text.includes('@@ref:')
    ? text.replace(REF, (_, kind: string, n: string) => {
        const ids = refs[kind] ?? [];
        return ids.length === 0 ? 'unknown' : ids[Number(n) % ids.length]!;
      })
    : text;

export const ref = (kind: string, n: number): string => `@@ref:${kind}:${n}@@`;
