import type { GenerateTextOutput } from '@ai-backend/core/internal';

/** An ai.generateText result, as the /v1 format tests feed it to the answer builders. */
export function generateResult(
  over: Partial<GenerateTextOutput['data']> = {},
  extra: Partial<GenerateTextOutput> = {},
): GenerateTextOutput {
  return {
    success: true,
    data: {
      text: 'Hello',
      provider: 'openai',
      model: 'gpt-4.1-mini',
      finishReason: 'stop',
      usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
      requestId: 'r1',
      ...over,
    },
    ...extra,
  };
}
