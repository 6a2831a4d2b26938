import type { GenerateTextOutput, WireFormat } from '@ai-backend/core/internal';

/**
 * The `usage` a /v1 answer carries when its upstream's could not be read (none, or counts that are
 * not token counts), and the call was charged its hold (docs/ai.md, "Metering"): the tokens charged,
 * so no client takes the call for a free one. Chat and Responses say them in `total_tokens` with
 * input and output 0; Anthropic's usage has no total, so `input_tokens` carries them, output 0
 * (the hold is not split into input and output). Undefined when the upstream's usage was read
 * (the answer says it), or nothing was charged or recorded.
 */
export function chargedUsage(format: WireFormat, r: GenerateTextOutput): Record<string, unknown> | undefined {
  if (r.data.usage.totalTokens !== null) return undefined;
  const tokens = r.tokenUsage?.tokensUsed ?? r.usageInfo?.tokensUsed;
  if (tokens === undefined) return undefined;
  if (format === 'anthropic-messages') return { input_tokens: tokens, output_tokens: 0 };
  if (format === 'openai-chat') return { prompt_tokens: 0, completion_tokens: 0, total_tokens: tokens };
  return {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: tokens,
  };
}

/**
 * A passed-through plain answer (the provider's JSON body) with `usage` replaced by chargedUsage
 * when the provider's could not be read; the body as it came otherwise (also a body that is not a
 * JSON object, which no client reads usage from).
 */
export function passedThroughBody(format: WireFormat, r: GenerateTextOutput, body: Uint8Array): Uint8Array {
  const usage = chargedUsage(format, r);
  if (!usage) return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return body;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return body;
  return new TextEncoder().encode(JSON.stringify({ ...parsed, usage }));
}
