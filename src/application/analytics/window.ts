import { DomainError, invalidRequest } from '../../domain/errors.ts';

/**
 * Analytics windows are whole UTC days: aggregates are kept per day, so a timestamp selects the
 * day it falls in. A window of N days is N calendar days, both ends included
 * (2025-01-01..2025-03-31 is 90 days; ..2025-04-01 is 91 and refused).
 */
export interface DayWindow {
  startDay: string;
  endDay: string;
  /** Calendar days covered, both ends included. */
  days: number;
}

export const MAX_DAYS = 90;
export const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

export const dayNumber = (day: string): number => Date.parse(`${day}T00:00:00Z`) / DAY_MS;
export const dayFromNumber = (n: number): string => new Date(n * DAY_MS).toISOString().slice(0, 10);
export const addDays = (day: string, n: number): string => dayFromNumber(dayNumber(day) + n);

/** Every day of the window, in order. */
export const daysOf = (w: DayWindow): string[] => Array.from({ length: w.days }, (_, i) => addDays(w.startDay, i));

/** The UTC day of a date (`YYYY-MM-DD`) or timestamp parameter; INVALID_REQUEST when it is neither. */
export const parseDay = (value: string, field: string): string => {
  const date = DATE_RE.exec(value);
  if (date) {
    const day = value;
    if (Number.isFinite(dayNumber(day)) && dayFromNumber(dayNumber(day)) === day) return day;
  } else if (TIMESTAMP_RE.test(value)) {
    const ms = Date.parse(value);
    // in UTC a timestamp may fall outside the years 0000-9999 (9999-12-31T23:00:00-02:00)
    const day = Number.isFinite(ms) ? new Date(ms).toISOString().slice(0, 10) : '';
    if (DATE_RE.test(day)) return day;
  }
  throw invalidRequest([{ field, message: 'must be a date (YYYY-MM-DD) or an ISO 8601 timestamp' }]);
};

/** The first day a window may start on: days are rendered as YYYY-MM-DD. */
const FIRST_DAY = '0000-01-01';

/** 29 days before `endDay` (30 days in all), but not before FIRST_DAY. */
const defaultStart = (endDay: string): string =>
  dayNumber(endDay) - (DEFAULT_DAYS - 1) < dayNumber(FIRST_DAY) ? FIRST_DAY : addDays(endDay, -(DEFAULT_DAYS - 1));

/**
 * The window of `start_date`/`end_date`: end defaults to today (the injected clock), start to
 * 29 days before the end (30 days in all). More than 90 days: INVALID_TIME_PERIOD.
 */
export const parseWindow = (
  now: Date,
  start: string | undefined,
  end: string | undefined,
  fields = { start: 'start_date', end: 'end_date' },
): DayWindow => {
  const endDay = end === undefined ? now.toISOString().slice(0, 10) : parseDay(end, fields.end);
  const startDay = start === undefined ? defaultStart(endDay) : parseDay(start, fields.start);
  if (startDay > endDay) throw invalidRequest([{ field: fields.start, message: `must not be after ${fields.end}` }]);
  const days = dayNumber(endDay) - dayNumber(startDay) + 1;
  if (days > MAX_DAYS) {
    throw new DomainError(
      'INVALID_TIME_PERIOD',
      `The time period covers ${days} days; at most ${MAX_DAYS} are allowed`,
      { max_days: MAX_DAYS, requested_days: days },
    );
  }
  return { startDay, endDay, days };
};

/** The window as the responses show it: first day 00:00:00Z to last day 23:59:59Z. */
export const timePeriod = (w: DayWindow) => ({ start: `${w.startDay}T00:00:00Z`, end: `${w.endDay}T23:59:59Z` });

export type Interval = 'day' | 'week' | 'month';

/** The bucket a day belongs to, labelled by its first day: the day, its Monday, or the 1st of its month. */
export const bucketOf = (day: string, interval: Interval): string => {
  if (interval === 'day') return day;
  if (interval === 'month') return `${day.slice(0, 7)}-01`;
  const weekday = (new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
  return addDays(day, -weekday);
};
