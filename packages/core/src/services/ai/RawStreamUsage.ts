import { isTokenCount } from './tokenCount.js';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
const tokens = (v: unknown): number => (isTokenCount(v) ? v : 0);

/**
 * The largest token counts an SDK-path stream's raw events reported (the AI SDK's `raw` parts:
 * each event as the provider sent it). The AI SDK keeps the last usage event of a stream, so a
 * provider that repeats it with smaller counts would lower the charge; the call engine charges at
 * least these instead, as the pass-through path does (WireStream). Read in the shapes of the
 * providers' wires: OpenAI Chat and compatible (`usage.prompt_tokens` / `completion_tokens`), the
 * Responses API (`response.usage`), Anthropic (`message_start`'s input, `message_delta`'s output),
 * Google (`usageMetadata`); counts that are not token counts are left to the SDK's own reading.
 */
export class RawStreamUsage {
  input = 0;
  output = 0;

  note(raw: unknown): void {
    const o = obj(raw);
    if (!o) return;
    const usage = obj(o.usage);
    if (o.type === 'message_start') {
      const u = obj(obj(o.message)?.usage);
      // Its output count is a placeholder (1): only the input is read.
      this.take(tokens(u?.input_tokens) + tokens(u?.cache_creation_input_tokens) + tokens(u?.cache_read_input_tokens), 0);
    } else if (o.type === 'message_delta')
      this.take(
        tokens(usage?.input_tokens) + tokens(usage?.cache_creation_input_tokens) + tokens(usage?.cache_read_input_tokens),
        tokens(usage?.output_tokens),
      );
    else if (usage && ('prompt_tokens' in usage || 'completion_tokens' in usage))
      this.take(tokens(usage.prompt_tokens), tokens(usage.completion_tokens));
    const response = obj(obj(o.response)?.usage);
    if (response) this.take(tokens(response.input_tokens), tokens(response.output_tokens));
    const google = obj(o.usageMetadata);
    if (google) this.take(tokens(google.promptTokenCount), tokens(google.candidatesTokenCount) + tokens(google.thoughtsTokenCount));
  }

  private take(input: number, output: number): void {
    this.input = Math.max(this.input, input);
    this.output = Math.max(this.output, output);
  }
}
