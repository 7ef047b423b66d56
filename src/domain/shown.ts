/**
 * How errors show what a request sent: never whole. A 1 MB member name or value echoed in an
 * error's message and again in its details made a 2 MB answer to a 1 MB request.
 */

/** Field paths (`order.items[0].price`) are shown up to this many characters. */
const FIELD_CHARACTERS = 100;
/** String values are shown up to this many characters. */
const VALUE_CHARACTERS = 40;

const cut = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;

/** A field path as errors name it: cut to 100 characters, with its length. */
export const shownField = (field: string): string => cut(field, FIELD_CHARACTERS);

/**
 * A value as errors show it: a string as JSON, cut to 40 characters (with its length); a number,
 * boolean or null as JSON; an array or object by its kind.
 */
export const shownValue = (value: unknown): string => {
  if (typeof value === 'string')
    return value.length <= VALUE_CHARACTERS
      ? JSON.stringify(value)
      : `${JSON.stringify(value.slice(0, VALUE_CHARACTERS))}… (${value.length} characters)`;
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  return String(JSON.stringify(value));
};
