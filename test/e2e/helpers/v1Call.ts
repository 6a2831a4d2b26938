import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

/** The three wire formats /v1 speaks, each as its official client calls it. */
export const V1_FORMATS = ['chat', 'responses', 'messages'] as const;
export type V1Format = (typeof V1_FORMATS)[number];

/** The model each format is asked for: a target that speaks the format itself (passed through when `ai.passThrough` is on). */
export const V1_MODEL: Record<V1Format, string> = {
  chat: 'openai/gpt-4.1-mini',
  responses: 'openai/gpt-4.1-mini',
  messages: 'anthropic/claude-sonnet-4-5',
};

/** What the caller of one /v1 call saw. */
export interface V1Outcome {
  /** The answer's HTTP status (the error's, when the call failed before its status line). */
  status: number;
  /** `x-ai-backend-path` (`pass-through` or absent). */
  path: string | null;
  /** `x-ai-backend-request-id` of a pass-through answer. */
  requestId: string | null;
  /** `x-ai-backend-model` of a pass-through answer. */
  model: string | null;
  /** `x-ai-backend-cache` (`hit`, `miss`, or absent when the cache was not consulted). */
  cache: string | null;
  /** `x-ai-backend-tokens-charged` of a plain, platform-paid pass-through answer. */
  tokensCharged: string | null;
  /** The output text the caller received (what it has of a stream that broke off). */
  text: string;
  /** The stream ended with an error (the client threw, or the format's error event came). */
  failed: boolean;
  /** Usage the caller received (OpenAI Chat's usage chunk, a plain answer's `usage`). */
  usage: unknown;
  /** Events (or chunks) received. */
  events: unknown[];
}

export interface V1Clients {
  openai: OpenAI;
  anthropic: Anthropic;
}

/** Clients for a /v1 server with the caller's token; `headers` (x-provider-api-key for BYOK) on every call. */
export function v1Clients(url: string, token: string, headers: Record<string, string> = {}): V1Clients {
  return {
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: token, maxRetries: 0, defaultHeaders: headers }),
    anthropic: new Anthropic({ baseURL: url, authToken: token, apiKey: null, maxRetries: 0, defaultHeaders: headers }),
  };
}

interface Ask {
  content: string;
  stream: boolean;
  maxTokens?: number;
  /** OpenAI Chat: ask for the usage chunk (`stream_options.include_usage`). */
  includeUsage?: boolean;
  /** Another model than V1_MODEL's. */
  model?: string;
}

/**
 * One call through the official client of `format`, read to its end; a failure (before the status
 * line or in the stream) is part of the outcome, not thrown.
 */
export async function callV1(c: V1Clients, format: V1Format, ask: Ask): Promise<V1Outcome> {
  const out: V1Outcome = {
    status: 0,
    path: null,
    requestId: null,
    model: null,
    cache: null,
    tokensCharged: null,
    text: '',
    failed: false,
    usage: undefined,
    events: [],
  };
  const model = ask.model ?? V1_MODEL[format];
  const max = ask.maxTokens ?? 64;
  const headersOf = (r: Response) => {
    out.status = r.status;
    out.path = r.headers.get('x-ai-backend-path');
    out.requestId = r.headers.get('x-ai-backend-request-id');
    out.model = r.headers.get('x-ai-backend-model');
    out.cache = r.headers.get('x-ai-backend-cache');
    out.tokensCharged = r.headers.get('x-ai-backend-tokens-charged');
  };
  try {
    if (format === 'chat') {
      const messages = [{ role: 'user' as const, content: ask.content }];
      if (!ask.stream) {
        const { data, response } = await c.openai.chat.completions.create({ model, messages, max_tokens: max }).withResponse();
        headersOf(response);
        out.text = data.choices[0]?.message.content ?? '';
        out.usage = data.usage;
        return out;
      }
      const { data, response } = await c.openai.chat.completions
        .create({
          model,
          messages,
          max_tokens: max,
          stream: true,
          ...(ask.includeUsage ? { stream_options: { include_usage: true } } : {}),
        })
        .withResponse();
      headersOf(response);
      for await (const chunk of data) {
        out.events.push(chunk);
        out.text += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) out.usage = chunk.usage;
      }
      return out;
    }
    if (format === 'responses') {
      if (!ask.stream) {
        const { data, response } = await c.openai.responses.create({ model, input: ask.content, max_output_tokens: max }).withResponse();
        headersOf(response);
        out.text = data.output_text;
        out.usage = data.usage;
        return out;
      }
      const { data, response } = await c.openai.responses
        .create({ model, input: ask.content, max_output_tokens: max, stream: true })
        .withResponse();
      headersOf(response);
      for await (const e of data) {
        out.events.push(e);
        if (e.type === 'response.output_text.delta') out.text += e.delta;
        if (e.type === 'error') out.failed = true;
      }
      return out;
    }
    const messages = [{ role: 'user' as const, content: ask.content }];
    if (!ask.stream) {
      const { data, response } = await c.anthropic.messages.create({ model, max_tokens: max, messages }).withResponse();
      headersOf(response);
      out.text = data.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      out.usage = data.usage;
      return out;
    }
    const { data, response } = await c.anthropic.messages.create({ model, max_tokens: max, messages, stream: true }).withResponse();
    headersOf(response);
    for await (const e of data) {
      out.events.push(e);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') out.text += e.delta.text;
    }
    return out;
  } catch (err) {
    out.failed = true;
    if (!out.status) out.status = (err as { status?: number }).status ?? 0;
    return out;
  }
}
