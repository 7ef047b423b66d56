/**
 * Largest-remainder allocation of an integer amount over integer weights. Pure.
 */

function assertNonNegativeInteger(x: number, what: string): void {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) {
    throw new RangeError(`${what} must be a non-negative safe integer, got ${String(x)}`);
  }
}

/**
 * Splits `total` over lines in proportion to `weights`.
 * Each share is floor(total × w / Σw) (exact, BigInt); the leftover cents go one each to
 * the lines with the largest remainders, ties to the lower index.
 * Guarantees: shares sum to exactly `total`; a zero weight gets 0; when total ≤ Σw every
 * share ≤ its weight; deterministic. `total` 0 gives all zeros (also for Σw = 0);
 * Σw = 0 with total > 0 throws RangeError.
 */
export function allocate(total: number, weights: number[]): number[] {
  assertNonNegativeInteger(total, 'total');
  weights.forEach((w, i) => assertNonNegativeInteger(w, `weights[${i}]`));
  if (total === 0) return weights.map(() => 0);
  const sum = weights.reduce((acc, w) => acc + BigInt(w), 0n);
  if (sum === 0n) throw new RangeError('cannot allocate a positive total over zero weights');

  const t = BigInt(total);
  const shares = weights.map((w) => (t * BigInt(w)) / sum);
  const remainders = weights.map((w) => (t * BigInt(w)) % sum);
  let leftover = t - shares.reduce((acc, s) => acc + s, 0n);

  const order = weights
    .map((_, i) => i)
    .sort((a, b) => (remainders[a] === remainders[b] ? a - b : remainders[a] > remainders[b] ? -1 : 1));
  for (const i of order) {
    if (leftover === 0n) break;
    shares[i] += 1n;
    leftover -= 1n;
  }
  return shares.map(Number);
}
