import type { V1Clients, V1Format } from './v1Call.js';

/** What the official client of a format read of one /v1 answer: the `model` it names and the usage it parsed. */
export interface V1Answer {
  /** Every `model` the answer named (a stream names it on several events: each must agree). */
  models: string[];
  /**
   * The tokens the client reads as the call's usage: `total_tokens` (Chat, Responses),
   * `input_tokens` + `output_tokens` and the cache counts (Anthropic); undefined when it read none.
   */
  usage: number | undefined;
  /** The call's ledger request id, from the header the client reads (`x-request-id` / `request-id`). */
  requestId: string | null;
  /** `x-ai-backend-cache`, `x-ai-backend-path`, `x-ai-backend-tokens-charged`. */
  cache: string | null;
  path: string | null;
  tokensCharged: string | null;
  text: string;
  /** The client raised an error (a stream that broke off). */
  failed: boolean;
}

interface Ask {
  model: string;
  content: string;
  stream: boolean;
  /** Leave the response cache out of this call (`x-ai-backend-cache: off`). */
  noCache?: boolean;
}

type AnthropicUsage = {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
};
const anthropicTokens = (u: AnthropicUsage) =>
  u.input_tokens + u.output_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);

/**
 * One call through the official client of `format`, read as a caller reads it: `create` for a
 * plain answer; for a stream the Chat chunks (usage chunk asked for), the Responses events up to
 * `response.completed`, and `@anthropic-ai/sdk`'s MessageStream (`finalMessage()`, which takes
 * usage from `message_start` and `message_delta`). A failure is part of the answer, not thrown.
 */
export async function askV1(c: V1Clients, format: V1Format, ask: Ask): Promise<V1Answer> {
  const out: V1Answer = {
    models: [],
    usage: undefined,
    requestId: null,
    cache: null,
    path: null,
    tokensCharged: null,
    text: '',
    failed: false,
  };
  const options = ask.noCache ? { headers: { 'x-ai-backend-cache': 'off' } } : {};
  const headersOf = (h: Headers) => {
    out.requestId = h.get('x-request-id');
    out.cache = h.get('x-ai-backend-cache');
    out.path = h.get('x-ai-backend-path');
    out.tokensCharged = h.get('x-ai-backend-tokens-charged');
  };
  const { model, content } = ask;
  try {
    if (format === 'chat') {
      const messages = [{ role: 'user' as const, content }];
      if (!ask.stream) {
        const { data, response } = await c.openai.chat.completions.create({ model, messages, max_tokens: 64 }, options).withResponse();
        headersOf(response.headers);
        out.models.push(data.model);
        out.text = data.choices[0]?.message.content ?? '';
        out.usage = data.usage?.total_tokens;
        return out;
      }
      const { data, response } = await c.openai.chat.completions
        .create({ model, messages, max_tokens: 64, stream: true, stream_options: { include_usage: true } }, options)
        .withResponse();
      headersOf(response.headers);
      for await (const chunk of data) {
        out.models.push(chunk.model);
        out.text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) out.usage = chunk.usage.total_tokens;
      }
      return out;
    }
    if (format === 'responses') {
      const body = { model, input: content, max_output_tokens: 64 };
      if (!ask.stream) {
        const { data, response } = await c.openai.responses.create(body, options).withResponse();
        headersOf(response.headers);
        out.models.push(data.model);
        out.text = data.output_text;
        out.usage = data.usage?.total_tokens;
        return out;
      }
      const { data, response } = await c.openai.responses.create({ ...body, stream: true }, options).withResponse();
      headersOf(response.headers);
      for await (const e of data) {
        if (e.type === 'response.created' || e.type === 'response.completed' || e.type === 'response.incomplete') {
          out.models.push(e.response.model);
          if (e.response.usage) out.usage = e.response.usage.total_tokens;
        }
        if (e.type === 'response.output_text.delta') out.text += e.delta;
        if (e.type === 'error') out.failed = true;
      }
      return out;
    }
    const messages = [{ role: 'user' as const, content }];
    if (!ask.stream) {
      const { data, response } = await c.anthropic.messages.create({ model, max_tokens: 64, messages }, options).withResponse();
      headersOf(response.headers);
      out.models.push(data.model);
      out.text = data.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      out.usage = anthropicTokens(data.usage);
      return out;
    }
    const stream = c.anthropic.messages.stream({ model, max_tokens: 64, messages }, options);
    stream.on('streamEvent', (e) => {
      if (e.type === 'message_start') out.models.push(e.message.model);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') out.text += e.delta.text;
    });
    const { response } = await stream.withResponse();
    headersOf(response.headers);
    const final = await stream.finalMessage();
    out.models.push(final.model);
    out.usage = anthropicTokens(final.usage);
    return out;
  } catch {
    out.failed = true;
    return out;
  }
}
