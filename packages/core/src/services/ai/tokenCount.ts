/**
 * The largest token count an answer may report and be believed: ten times the largest context
 * window of any model (10 M tokens), far inside every store's integer range, so a hostile or broken
 * upstream's `1e9` or `1e300` never reaches a balance, a budget or a counter (the call is charged
 * its hold instead). A real call above its hold (an image by URL costs more tokens than its bytes)
 * is still charged what it reported.
 */
export const MAX_TOKEN_COUNT = 100_000_000;

/** A count of tokens: an integer from 0 to MAX_TOKEN_COUNT (not a string, a fraction, a negative or a huge number). */
export function isTokenCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_TOKEN_COUNT;
}

/**
 * The tokens a call's reported usage charges: its input plus its output, whatever total the
 * answer claimed (the AI SDK adds them the same way). Undefined when the usage cannot be read, and
 * the call is then charged its hold (docs/ai.md, "Metering"): an input that is absent, zero (a real
 * call always has input, so zero means "not reported"), or not a token count, or an output that is
 * not one. An absent output counts as none, as the AI SDK reports it.
 */
export function usageTokens(u: { inputTokens?: unknown; outputTokens?: unknown } | undefined): number | undefined {
  if (!u || !isTokenCount(u.inputTokens) || u.inputTokens === 0) return undefined;
  if (u.outputTokens == null) return u.inputTokens;
  return isTokenCount(u.outputTokens) ? u.inputTokens + u.outputTokens : undefined;
}

/**
 * The input an AI SDK usage says the provider read from its prompt cache
 * (`inputTokenDetails.cacheReadTokens`: OpenAI's and OpenRouter's `cached_tokens`, Google's
 * `cachedContentTokenCount`, Anthropic's cache reads), at most its input. Undefined without any, or
 * when it is not a token count: the input is then priced as input, never below the bill.
 */
export function sdkCachedInput(
  u: { inputTokens?: unknown; inputTokenDetails?: { cacheReadTokens?: unknown } } | undefined,
): number | undefined {
  const reads = u?.inputTokenDetails?.cacheReadTokens;
  if (!isTokenCount(reads) || reads === 0 || !isTokenCount(u!.inputTokens)) return undefined;
  return Math.min(reads, u!.inputTokens);
}
