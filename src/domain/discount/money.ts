/**
 * Money helpers. All amounts are integer cents; percentages have at most 2 decimals.
 * Pure: no I/O, no clock, no randomness.
 */

/** A safe, non-negative integer amount of cents. */
export function isCents(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

/**
 * True when `x` is finite and has at most 2 decimal places, tolerating binary float noise
 * (33.33 * 100 = 3332.9999999999995 counts as 2 decimals). The tolerance grows with the
 * magnitude so that large values are not rejected because of representation error.
 */
export function hasAtMostTwoDecimals(x: number): boolean {
  if (typeof x !== 'number' || !Number.isFinite(x)) return false;
  const scaled = x * 100;
  const tolerance = Math.max(1e-9, Math.abs(scaled) * Number.EPSILON * 4);
  return Math.abs(scaled - Math.round(scaled)) <= tolerance;
}

/** A percentage converted to integer basis points (12.5 → 1250); throws RangeError when invalid. */
function toBasisPoints(percent: number): number {
  if (typeof percent !== 'number' || !Number.isFinite(percent) || percent < 0 || percent > 100) {
    throw new RangeError(`percent must be in [0, 100], got ${String(percent)}`);
  }
  if (!hasAtMostTwoDecimals(percent)) {
    throw new RangeError(`percent must have at most 2 decimals, got ${String(percent)}`);
  }
  return Math.round(percent * 100);
}

/**
 * `base × percent / 100`, rounded half-up to the cent, computed exactly with BigInt.
 * The result is an integer in [0, base]. Throws RangeError for a base that is not a safe
 * non-negative integer or a percent outside [0, 100] / with more than 2 decimals.
 */
export function percentOf(base: number, percent: number): number {
  if (!isCents(base)) throw new RangeError(`base must be non-negative integer cents, got ${String(base)}`);
  const bp = BigInt(toBasisPoints(percent));
  return Number((BigInt(base) * bp + 5000n) / 10000n);
}
