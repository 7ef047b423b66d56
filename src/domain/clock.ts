/** Time comes from an injected clock; nothing in the domain calls Date.now(). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO 8601 UTC with second precision, as the API renders timestamps: YYYY-MM-DDThh:mm:ssZ. */
export const isoSeconds = (date: Date): string => `${date.toISOString().slice(0, 19)}Z`;

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const MIN_TIME = -62_167_219_200_000; // 0000-01-01T00:00:00Z

/**
 * A timestamp a client sent, as an instant; undefined unless it is one the service can store and
 * render: an RFC 3339 date-time with a zone (`Z` or `±hh:mm`), a real calendar date, seconds 00
 * to 59 and, in UTC, between the years 0000 and 9999. A leap second (`23:59:60`) is refused: a
 * JavaScript instant cannot hold it, and rounding it silently would move the client's value
 * (docs/decisions/016). Fractions of a second are kept here; `isoSeconds` drops them.
 */
export const parseTimestamp = (text: string): Date | undefined => {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day); // Date.UTC would read years 0-99 as 1900-1999
  local.setUTCHours(hour, minute, second, m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000));
  const sign = m[8] === '-' ? -1 : 1;
  const time = local.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
  if (time < MIN_TIME || time > MAX_TIME) return undefined;
  return new Date(time);
};

/** Whether `text` is a timestamp the service accepts (see parseTimestamp). */
export const isTimestamp = (text: string): boolean => parseTimestamp(text) !== undefined;

const daysInMonth = (year: number, month: number): number =>
  new Date(Date.UTC(2000, month, 0)).getUTCDate() + (month === 2 && !isLeapYear(year) ? -1 : 0);

const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
