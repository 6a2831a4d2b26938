/**
 * The stop sequence an answer stopped on, when its provider names it. The AI SDK's packages that
 * read it put it in their provider metadata as `stopSequence`: Anthropic's (from the Messages
 * API's `stop_sequence`) and Bedrock's (an Anthropic model's `stop_sequence`). Other providers say
 * only that the model stopped (OpenAI `finish_reason: 'stop'`, Google `finishReason: 'STOP'`), the
 * same for its natural end as for a stop sequence, and leave the sequence out of the text: which
 * one matched, if any, cannot be known, so it stays undefined.
 */
export function stopSequenceOf(finishReason: string, providerMetadata: unknown): string | undefined {
  if (finishReason !== 'stop' || typeof providerMetadata !== 'object' || providerMetadata === null) return undefined;
  for (const meta of Object.values(providerMetadata)) {
    const s: unknown = typeof meta === 'object' && meta !== null ? (meta as { stopSequence?: unknown }).stopSequence : undefined;
    if (typeof s === 'string' && s !== '') return s;
  }
  return undefined;
}
