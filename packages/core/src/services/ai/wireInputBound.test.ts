import { describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { ATTACHMENT_TOKENS } from './buildPrompt.js';
import { forwardedRequest } from './passThrough/sendPassThrough.js';
import { asksProviderCache, wireInputBound } from './wireInputBound.js';
import type { PassThroughEndpoint, WireFormat, WireRequest } from './passThrough/wireRequest.js';

const ai = { maxContentChars: 200_000, maxAttachments: 8, maxAttachmentBytes: 5 * 1024 * 1024 };
const wire = (format: WireFormat, body: Record<string, unknown>): WireRequest => ({ format, body, stream: false });
const big = 'x'.repeat(600_000);
const base64 = 'A'.repeat(400_000);
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof CoreError ? err.appCode : 'not a CoreError';
  }
  return 'none';
};

describe('wireInputBound', () => {
  it('a plain body: its text plus the translation’s overheads, well under a kilobyte', () => {
    const n = wireInputBound(wire('openai-chat', { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hello' }] }), ai);
    expect(n).toBeGreaterThanOrEqual(5);
    expect(n).toBeLessThan(200);
  });

  // Every place a caller can put input that the translation drops: the bound grows with it (a
  // hold made from it covers what the provider bills), or the body is refused.
  const hidden: Array<[string, WireFormat, Record<string, unknown>]> = [
    ['a vendor field', 'openai-chat', { messages: [{ role: 'user', content: 'hi' }], prompt_prefix: big }],
    ['an assistant refusal part', 'openai-chat', { messages: [{ role: 'assistant', content: [{ type: 'refusal', refusal: big }] }] }],
    [
      'an Anthropic thinking block',
      'anthropic-messages',
      { messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: big }] }] },
    ],
    [
      'a text document inside a tool_result',
      'anthropic-messages',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'text', data: big } }] }],
          },
        ],
      },
    ],
  ];
  for (const [what, format, body] of hidden) {
    it(`${what} is counted: refused over the content limit, else in the bound`, () => {
      expect(codeOf(() => wireInputBound(wire(format, body), ai))).toBe('PAYLOAD_TOO_LARGE');
      expect(wireInputBound(wire(format, body), { ...ai, maxContentChars: 10_000_000 })).toBeGreaterThan(600_000);
    });
  }

  it('tool definitions count in the bound but not in the content limit (as the translation’s tools)', () => {
    const body = { messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', description: big } }] };
    expect(wireInputBound(wire('openai-chat', body), ai)).toBeGreaterThan(600_000);
  });

  it('image, file and document parts anywhere count ATTACHMENT_TOKENS each, up to maxAttachments, and their size is checked', () => {
    const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${base64}` } };
    const inSystem = {
      messages: [
        { role: 'system', content: [image] },
        { role: 'user', content: 'hi' },
      ],
    };
    const n = wireInputBound(wire('openai-chat', inSystem), ai);
    expect(n).toBeGreaterThanOrEqual(ATTACHMENT_TOKENS);
    expect(n).toBeLessThan(ATTACHMENT_TOKENS + 500);
    const doc = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64 } };
    const nine = { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: Array(9).fill(doc) }] }] };
    expect(codeOf(() => wireInputBound(wire('anthropic-messages', nine), ai))).toBe('PAYLOAD_TOO_LARGE');
    expect(codeOf(() => wireInputBound(wire('anthropic-messages', nine), { ...ai, maxAttachmentBytes: 1000, maxAttachments: 20 }))).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    const dev = { input: [{ role: 'developer', content: [{ type: 'input_file', file_data: `data:application/pdf;base64,${base64}` }] }] };
    expect(wireInputBound(wire('openai-responses', dev), ai)).toBeGreaterThanOrEqual(ATTACHMENT_TOKENS);
  });

  it('asksProviderCache: an Anthropic body with cache_control at the top or on a system, tool, message or nested block', () => {
    const cc = { cache_control: { type: 'ephemeral' } };
    const user = (content: unknown) => ({ messages: [{ role: 'user', content }] });
    const asks: Array<Record<string, unknown>> = [
      { ...user('hi'), ...cc },
      { ...user('hi'), system: [{ type: 'text', text: 's', ...cc }] },
      { ...user('hi'), tools: [{ name: 't', input_schema: { type: 'object' }, ...cc }] },
      user([{ type: 'text', text: 'hi', ...cc }]),
      user([{ type: 'tool_result', tool_use_id: 'x', content: [{ type: 'text', text: 'r', ...cc }] }]),
    ];
    for (const body of asks) expect(asksProviderCache(wire('anthropic-messages', body)), JSON.stringify(body)).toBe(true);
    expect(asksProviderCache(wire('anthropic-messages', user([{ type: 'text', text: 'hi' }])))).toBe(false);
    expect(asksProviderCache(wire('anthropic-messages', { ...user('hi'), cache_control: null }))).toBe(false);
    // OpenAI caches by itself, at no extra price: nothing to count.
    expect(asksProviderCache(wire('openai-chat', { messages: [{ role: 'user', content: 'hi' }], ...cc }))).toBe(false);
  });

  it('a price tier above the pricing table, or what is billed beyond tokens, is refused; the tiers it covers are forwarded', () => {
    const refused: Array<[WireFormat, Record<string, unknown>, string]> = [
      ['openai-chat', { messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority' }, 'service_tier'],
      ['openai-chat', { messages: [{ role: 'user', content: 'hi' }], service_tier: { tier: 'priority' } }, 'service_tier'],
      ['openai-responses', { input: 'hi', service_tier: 'priority' }, 'service_tier'],
      ['openai-responses', { input: 'hi', service_tier: 'scale' }, 'service_tier'],
      ['anthropic-messages', { messages: [{ role: 'user', content: 'hi' }], speed: 'fast' }, 'speed'],
      // Billed beyond tokens: a web search per call or per result.
      ['openai-chat', { messages: [{ role: 'user', content: 'hi' }], web_search_options: {} }, 'web_search_options'],
      ['openai-chat', { messages: [{ role: 'user', content: 'hi' }], plugins: [{ id: 'web' }] }, 'plugins'],
    ];
    for (const [format, body, param] of refused) {
      let err: unknown;
      try {
        wireInputBound(wire(format, body), ai);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(body)).toMatchObject({ appCode: 'INVALID_PARAMS', details: { param } });
      expect((err as Error).message).toMatch(/billed above the prices|bills it beyond the tokens/);
    }
    for (const tier of ['auto', 'default', 'flex', null])
      expect(wireInputBound(wire('openai-chat', { messages: [{ role: 'user', content: 'hi' }], service_tier: tier }), ai)).toBeGreaterThan(
        0,
      );
    expect(
      wireInputBound(wire('anthropic-messages', { messages: [{ role: 'user', content: 'hi' }], speed: 'standard' }), ai),
    ).toBeGreaterThan(0);
  });

  it('what is stored in the paying account is refused: file ids, file sources, stored prompts, MCP connectors, containers', () => {
    const refused: Array<[WireFormat, Record<string, unknown>]> = [
      ['openai-chat', { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }],
      ['openai-responses', { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] }],
      ['openai-responses', { input: 'hi', prompt: { id: 'pmpt_1' } }],
      ['anthropic-messages', { messages: [{ role: 'user', content: 'hi' }], mcp_servers: [{ type: 'url', url: 'https://x' }] }],
      ['anthropic-messages', { messages: [{ role: 'user', content: 'hi' }], container: 'c1' }],
      [
        'anthropic-messages',
        {
          messages: [
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'file', file_id: 'f' } }] }],
            },
          ],
        },
      ],
    ];
    for (const [format, body] of refused)
      expect(
        codeOf(() => wireInputBound(wire(format, body), ai)),
        JSON.stringify(body),
      ).toBe('INVALID_PARAMS');
  });
});

describe('forwardedRequest output limits', () => {
  const endpoint = { model: 'm', headers: {}, maxTokensField: 'max_completion_tokens' } as unknown as PassThroughEndpoint;
  it('every output limit the body carries is at most the hold’s', () => {
    const body = { messages: [], max_completion_tokens: 16, max_tokens: 30_000 };
    const sent = JSON.parse(forwardedRequest(wire('openai-chat', body), endpoint, 16).body);
    expect(sent).toMatchObject({ max_completion_tokens: 16, max_tokens: 16 });
    const odd = JSON.parse(forwardedRequest(wire('openai-responses', { input: 'x', max_output_tokens: '900' }), endpoint, 50).body);
    expect(odd.max_output_tokens).toBe(50);
    const lower = JSON.parse(forwardedRequest(wire('openai-chat', { messages: [], max_tokens: 8 }), endpoint, 16).body);
    expect(lower.max_tokens).toBe(8);
  });
});
