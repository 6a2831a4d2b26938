/**
 * The upper bound of the histogram bucket holding the `p`th percentile: `buckets[i]` counts the
 * values up to `bounds[i]` (a last, overflow bucket has no bound). Null without any value, or when
 * the percentile falls in the overflow bucket. `count` defaults to the buckets' sum.
 */
export function bucketPercentile(
  buckets: readonly number[],
  bounds: readonly number[],
  p: number,
  count = buckets.reduce((a, b) => a + b, 0),
): number | null {
  if (count === 0) return null;
  const rank = Math.ceil((p / 100) * count);
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    seen += buckets[i]!;
    if (seen >= rank) return bounds[i] ?? null;
  }
  return null;
}
