/**
 * Small readers for untrusted configuration objects: each throws 400 INVALID_CONFIGURATION with
 * the spec's `{field, issue, suggestion}` naming the offending member. The domain checks every
 * config completely (shape and meaning), because an update's `config` can only be checked once
 * the stored voucher's type is known. Pure.
 */
import { DomainError } from '../errors.ts';
import { isTimestamp } from '../clock.ts';
import { hasAtMostTwoDecimals } from './money.ts';
import { shownField, shownValue } from '../shown.ts';

/** The field is the request's own path (member names included), so it is shown cut (shown.ts). */
export const invalidConfiguration = (path: string, issue: string, suggestion: string): DomainError => {
  const field = shownField(path);
  return new DomainError('INVALID_CONFIGURATION', `Invalid configuration: ${field} ${issue}`, {
    field,
    issue,
    suggestion,
  });
};

export type Obj = Record<string, unknown>;

export const join = (path: string, key: string | number): string =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;

export const object = (value: unknown, field: string): Obj => {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidConfiguration(field || 'config', 'must be an object', 'send a JSON object');
  }
  return value as Obj;
};

/** Rejects members outside `allowed` (the schemas say additionalProperties: false). */
export const onlyKeys = (value: Obj, allowed: readonly string[], path: string): void => {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw invalidConfiguration(join(path, key), 'is not a known member', `use only: ${allowed.join(', ')}`);
  }
};

export const required = (value: Obj, key: string, path: string): unknown => {
  if (value[key] === undefined) throw invalidConfiguration(join(path, key), 'is required', `add ${key}`);
  return value[key];
};

export const integer = (value: unknown, field: string, min: number, max: number): number => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalidConfiguration(
      field,
      `must be an integer between ${min} and ${max}`,
      `use a whole number from ${min} to ${max}`,
    );
  }
  return value;
};

export const string = (value: unknown, field: string): string => {
  if (typeof value !== 'string' || value.length === 0 || value.length > 128) {
    throw invalidConfiguration(field, 'must be a non-empty string of at most 128 characters', 'send a string');
  }
  return value;
};

export const boolean = (value: unknown, field: string): boolean => {
  if (typeof value !== 'boolean') throw invalidConfiguration(field, 'must be true or false', 'send a boolean');
  return value;
};

export const timestamp = (value: unknown, field: string): string => {
  if (typeof value !== 'string' || !isTimestamp(value)) {
    throw invalidConfiguration(
      field,
      'must be an ISO 8601 timestamp with a zone (seconds 00 to 59)',
      'use the form 2026-01-31T00:00:00Z',
    );
  }
  return value;
};

export const oneOf = <T extends string>(value: unknown, field: string, allowed: readonly T[], what: string): T => {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw invalidConfiguration(
      field,
      `is not a known ${what}: ${shownValue(value)}`,
      `use one of ${allowed.join(', ')}`,
    );
  }
  return value as T;
};

export const stringList = (value: unknown, field: string, maxItems = 1000): string[] => {
  if (!Array.isArray(value) || value.length > maxItems) {
    throw invalidConfiguration(field, `must be an array of at most ${maxItems} strings`, 'send an array of strings');
  }
  return value.map((item, i) => string(item, join(field, i)));
};

export const DISCOUNT_TYPES = ['percentage', 'fixed'] as const;
export type DiscountType = (typeof DISCOUNT_TYPES)[number];

/**
 * A discount amount with its type: a percentage is 0 to 100 with at most 2 decimals, a fixed
 * amount integer cents 1 to 100,000,000 (the bounds of a fixed voucher's `value`).
 */
export const discountAmount = (value: unknown, type: DiscountType, field: string): number => {
  if (type === 'percentage') {
    if (typeof value !== 'number' || !(value >= 0 && value <= 100) || !hasAtMostTwoDecimals(value)) {
      throw invalidConfiguration(
        field,
        'must be a percentage between 0 and 100 with at most 2 decimals',
        'use e.g. 15 or 12.5',
      );
    }
    return value;
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 100_000_000) {
    throw invalidConfiguration(
      field,
      'must be an amount in integer cents between 1 and 100000000',
      'use e.g. 500 for 5.00',
    );
  }
  return value;
};
