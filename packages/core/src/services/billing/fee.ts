/**
 * Platform fee on `tokens` at `rate`, rounded up to a whole token. The product is first
 * rounded to 6 decimals so binary floating point cannot turn 100 * 0.1 into 11 tokens.
 */
export function platformFee(tokens: number, rate: number): number {
  if (tokens <= 0 || rate <= 0) return 0;
  return Math.ceil(Math.round(tokens * rate * 1e6) / 1e6);
}

/** Tokens plus their platform fee: what a server-paid call of `tokens` costs. */
export function withFee(tokens: number, rate: number): number {
  return tokens + platformFee(tokens, rate);
}
