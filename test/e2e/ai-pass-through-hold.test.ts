import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, creditTokens, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { settlementOf } from './helpers/settlementOf.js';

/**
 * The pass-through path forwards the caller's body as sent, so its hold and its limits must cover
 * all of that body, not only what the translation read (docs/ai.md#pass-through, "What the hold
 * covers"). Each case puts input where the translation does not look: a legacy `functions` list,
 * a vendor field, an image in a system message, an Anthropic thinking block or a document inside
 * a `tool_result`, a Responses developer item with a file. Each is either refused before any
 * upstream request or held at least its size; a second output limit is lowered to the hold's; and
 * what is stored in the paying account (file ids, stored prompts, MCP connectors, containers) is
 * refused.
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let users = 0;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 16 });
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  admin = await tokenFor('pth-admin', { admin: true });
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

const PATHS = { 'openai-chat': '/v1/chat/completions', 'openai-responses': '/v1/responses', 'anthropic-messages': '/v1/messages' } as const;
type Format = keyof typeof PATHS;
const MODEL: Record<Format, string> = {
  'openai-chat': 'openai/gpt-4.1-mini',
  'openai-responses': 'openai/gpt-4.1-mini',
  'anthropic-messages': 'claude-sonnet-4-5',
};

async function funded(tokens = 1_000_000) {
  const sub = `pth-user-${++users}`;
  await creditTokens(gw.url, admin, sub, tokens, `pth-${sub}`);
  return { sub, token: await tokenFor(sub) };
}

async function post(format: Format, token: string, body: Record<string, unknown>) {
  const res = await fetch(gw.url + PATHS[format], {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL[format], ...body }),
  });
  return { res, json: (await res.json()) as Record<string, unknown> };
}

const SIZE = 40_000;
const filler = (c: string) => c.repeat(SIZE);
const base64 = 'QUJD'.repeat(20_000);
const user = (content: unknown) => ({ role: 'user', content });
/** An Anthropic conversation whose tool result carries `document`. */
const toolResultWith = (document: Record<string, unknown>) => ({
  max_tokens: 16,
  messages: [
    user('hi'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'look', input: {} }] },
    user([{ type: 'tool_result', tool_use_id: 'tu1', content: [document] }]),
  ],
});

const hidden: Array<[string, Format, Record<string, unknown>]> = [
  [
    'a legacy functions list',
    'openai-chat',
    { messages: [user('hi')], functions: [{ name: 'f', description: filler('f') }], max_tokens: 16 },
  ],
  ['a vendor field', 'openai-chat', { messages: [user('hi')], vendor_prompt: filler('v'), max_tokens: 16 }],
  [
    'an assistant refusal part',
    'openai-chat',
    { messages: [user('hi'), { role: 'assistant', content: [{ type: 'refusal', refusal: filler('r') }] }, user('again')], max_tokens: 16 },
  ],
  [
    'an Anthropic thinking block',
    'anthropic-messages',
    {
      max_tokens: 16,
      messages: [user('hi'), { role: 'assistant', content: [{ type: 'thinking', thinking: filler('t'), signature: 's' }] }, user('again')],
    },
  ],
  [
    'a text document inside an Anthropic tool_result',
    'anthropic-messages',
    toolResultWith({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: filler('d') } }),
  ],
];

describe('the hold covers the whole forwarded body', () => {
  for (const [what, format, body] of hidden) {
    it(`${what}: held at least its size, and refused over the content limit before any upstream request`, async () => {
      const u = await funded();
      upstream.reset();
      const { res } = await post(format, u.token, body);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ai-backend-path')).toBe('pass-through');
      expect((await settlementOf(gw, u.sub, res.headers.get('x-ai-backend-request-id')!)).held).toBeGreaterThanOrEqual(SIZE);

      // Past ai.maxContentChars (200,000), as the same text in a user message is.
      const over = JSON.parse(JSON.stringify(body).replace(/(.)\1{39999}/, (m) => m.repeat(6)));
      upstream.reset();
      const refused = await post(format, u.token, over);
      if (what.includes('functions')) {
        // Tool definitions are not content (as the translated `tools`): held, not refused.
        expect(refused.res.status).toBe(200);
        expect((await settlementOf(gw, u.sub, refused.res.headers.get('x-ai-backend-request-id')!)).held).toBeGreaterThanOrEqual(6 * SIZE);
      } else {
        expect(refused.res.status).toBe(413);
        expect(upstream.requests).toHaveLength(0);
      }
    });
  }

  it('a balance that covers the translated text but not the hidden input is refused with 402, nothing sent upstream', async () => {
    const u = await funded(5_000);
    upstream.reset();
    const { res } = await post('openai-chat', u.token, { messages: [user('hi')], vendor_prompt: filler('v'), max_tokens: 16 });
    expect(res.status).toBe(402);
    expect(upstream.requests).toHaveLength(0);
  });

  it('image and file parts where the translation does not read them count as attachments, within the attachment limits', async () => {
    const u = await funded();
    const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${base64}` } };
    upstream.reset();
    const nine = await post('openai-chat', u.token, { messages: [{ role: 'system', content: Array(9).fill(image) }, user('hi')] });
    expect(nine.res.status).toBe(413);
    expect(upstream.requests).toHaveLength(0);
    const file = { type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${base64}` };
    const dev = await post('openai-responses', u.token, {
      input: [{ role: 'developer', content: [file] }, user('hi')],
      max_output_tokens: 16,
    });
    expect(dev.res.status).toBe(200);
    expect((await settlementOf(gw, u.sub, dev.res.headers.get('x-ai-backend-request-id')!)).held).toBeGreaterThanOrEqual(2000);
  });
});

describe('the forwarded output limit', () => {
  it('a second, larger output limit is lowered to the one the hold was made for', async () => {
    const u = await funded();
    upstream.reset();
    const { res } = await post('openai-chat', u.token, { messages: [user('hi')], max_completion_tokens: 16, max_tokens: 30_000 });
    expect(res.status).toBe(200);
    expect(upstream.requests.at(-1)!.body).toMatchObject({ max_completion_tokens: 16, max_tokens: 16 });
  });
});

describe('what is stored in the paying account is refused', () => {
  const refused: Array<[string, Format, Record<string, unknown>]> = [
    ['a chat file part by file_id', 'openai-chat', { messages: [user([{ type: 'file', file: { file_id: 'file-abc' } }])] }],
    ['a Responses input_file by file_id', 'openai-responses', { input: [user([{ type: 'input_file', file_id: 'file-abc' }])] }],
    ['a Responses stored prompt', 'openai-responses', { input: 'hi', prompt: { id: 'pmpt_abc' } }],
    [
      'Anthropic MCP connectors',
      'anthropic-messages',
      { max_tokens: 16, messages: [user('hi')], mcp_servers: [{ type: 'url', url: 'https://mcp.example', name: 'x' }] },
    ],
    ['an Anthropic container', 'anthropic-messages', { max_tokens: 16, messages: [user('hi')], container: 'container_abc' }],
    // Billed above the pricing table: every money budget would count less than it spends.
    ['OpenAI priority processing on Chat Completions', 'openai-chat', { messages: [user('hi')], service_tier: 'priority' }],
    ['OpenAI priority processing on Responses', 'openai-responses', { input: 'hi', service_tier: 'priority' }],
    ['Anthropic fast mode', 'anthropic-messages', { max_tokens: 16, messages: [user('hi')], speed: 'fast' }],
    // Billed beyond tokens (a web search per call or per result).
    ['web search options', 'openai-chat', { messages: [user('hi')], web_search_options: { search_context_size: 'low' } }],
    ["OpenRouter's web plugin", 'openai-chat', { messages: [user('hi')], plugins: [{ id: 'web' }] }],
    [
      'an Anthropic file source inside a tool_result',
      'anthropic-messages',
      toolResultWith({ type: 'document', source: { type: 'file', file_id: 'file_abc' } }),
    ],
  ];
  for (const [what, format, body] of refused) {
    it(`${what}: 400 in the format's error shape, nothing sent upstream`, async () => {
      const u = await funded();
      upstream.reset();
      const { res, json } = await post(format, u.token, body);
      expect(res.status).toBe(400);
      expect(upstream.requests).toHaveLength(0);
      const error = json.error as Record<string, unknown>;
      expect(format === 'anthropic-messages' ? json.type : typeof error).toBe(format === 'anthropic-messages' ? 'error' : 'object');
      expect(String(error.message)).toMatch(/not supported|supported parts/);
    });
  }
});
