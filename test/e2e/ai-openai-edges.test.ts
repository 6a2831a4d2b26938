import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createTestUpstream, creditTokens, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * Edges of the OpenAI-compatible endpoint that the `openai` client and raw HTTP callers rely on:
 * upstream failures before a stream's first token keep their HTTP status, 401s carry the
 * WWW-Authenticate challenge, and /v1/models/{id} and unknown /v1 routes answer OpenAI-shaped.
 */
let upstream: TestUpstream;
let gw: AiServer;
let strict: AiServer;
let token: string;

describeV1Matrix('/v1 edges', (mode, path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    gw = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { aliases: { fast: 'openai/gpt-4.1-mini' } } }, { mode, path });
    // generateText not public: anonymous calls are refused by the access policy.
    strict = await startAiServer(upstream, { storage: { type: 'memory' }, mcp: { auth: { authType: 'jwt' } } }, { mode, path });
    await creditTokens(gw.url, await tokenFor('edge-admin', { admin: true }), 'edge-user', 100_000, 'k-edge');
    token = await tokenFor('edge-user');
  });
  afterAll(async () => {
    await gw.stop();
    await strict.stop();
    await upstream.close();
  });

  const post = (url: string, body: unknown, headers: Record<string, string> = {}, path = '/v1/chat/completions') =>
    fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  describe('stream: true, upstream fails before the first token', () => {
    it('a 429 is an HTTP 429 with Retry-After, which the openai client raises as RateLimitError', async () => {
      const res = await post(
        gw.url,
        { model: 'openai/gpt-4.1-mini', stream: true, messages: [{ role: 'user', content: 'x [[upstream:429:retry=7]]' }] },
        { authorization: `Bearer ${token}` },
      );
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('7');
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error');

      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
      const err = await client.chat.completions
        .create({ model: 'anthropic/claude-sonnet-4-5', stream: true, messages: [{ role: 'user', content: 'x [[upstream:429:retry=3]]' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    });

    it('a 5xx is an HTTP 502 api_error, not a 200 stream holding only an error', async () => {
      for (const model of ['google/gemini-2.5-flash', 'openrouter/openai/gpt-5-mini']) {
        const res = await post(
          gw.url,
          { model, stream: true, messages: [{ role: 'user', content: 'x [[upstream:500]]' }] },
          { authorization: `Bearer ${token}` },
        );
        expect(res.status).toBe(502);
        expect(((await res.json()) as { error: { type: string } }).error.type).toBe('api_error');
      }
    });

    it('a stream that began still ends with [DONE] and usage', async () => {
      const res = await post(
        gw.url,
        {
          model: 'openai/gpt-4.1-mini',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'hi' }],
        },
        { authorization: `Bearer ${token}` },
      );
      expect(res.status).toBe(200);
      const frames = (await res.text()).split('\n\n').filter(Boolean);
      expect(frames.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(frames.at(-2)!.slice(6))).toMatchObject({ choices: [], usage: { completion_tokens: 8 } });
      expect(JSON.parse(frames[0]!.slice(6)).choices[0].delta.role).toBe('assistant');
    });
  });

  describe('401 carries WWW-Authenticate', () => {
    it('an invalid bearer token', async () => {
      const res = await post(
        gw.url,
        { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] },
        { authorization: 'Bearer not-a-jwt' },
      );
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
      // Before the body is looked at: a bad token with a malformed body is still a 401.
      const early = await fetch(gw.url + '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer not-a-jwt' },
        body: '{nope',
      });
      expect(early.status).toBe(401);
      const models = await fetch(gw.url + '/v1/models', { headers: { authorization: 'Bearer not-a-jwt' } });
      expect(models.status).toBe(401);
      expect(models.headers.get('www-authenticate')).toMatch(/^Bearer /);
    });

    it('no bearer where the access policy wants an identity', async () => {
      const res = await post(strict.url, { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata=/);
    });

    it('no bearer and nothing to pay with (no provider key, no anonymous server-paid calls)', async () => {
      const res = await post(gw.url, { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
        /sign in, or send your own provider key \(BYOK\)/,
      );
      // Anonymous with its own provider key is still served.
      const own = await post(
        gw.url,
        { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] },
        { 'x-provider-api-key': 'sk-own' },
      );
      expect(own.status).toBe(200);
    });
  });

  describe('400s name the OpenAI field', () => {
    it('a wrong type reports param and message under the name the client sent', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ temperature: 'hot' }, 'temperature'],
        [{ max_tokens: '10' }, 'max_tokens'],
        [{ max_completion_tokens: 0 }, 'max_completion_tokens'],
        [{ max_completion_tokens: 10_000_000, max_tokens: 5 }, 'max_completion_tokens'],
        [{ max_tokens: 10_000_000 }, 'max_tokens'],
        [{ tools: [{ type: 'function', function: { name: 'has space', parameters: { type: 'object' } } }] }, 'tools[0].function.name'],
        [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'bogus' } } }] }, 'tools[0].function.parameters'],
        [
          { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } },
          'tool_choice',
        ],
        [
          { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'bogus' } } } },
          'response_format.json_schema.schema',
        ],
      ];
      for (const [extra, param] of cases) {
        const res = await post(
          gw.url,
          { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }], ...extra },
          { authorization: `Bearer ${token}` },
        );
        expect(res.status).toBe(400);
        const { error } = (await res.json()) as { error: { type: string; param: string | null; message: string } };
        expect(error).toMatchObject({ type: 'invalid_request_error', param });
        if (error.message.startsWith('invalid request')) expect(error.message).toContain(`${param}:`);
        // A limit core checks names the field as the request wrote it too.
        if (/may be at most/.test(error.message))
          expect(error.message).toMatch(new RegExp(`^${param.replace(/[[\].]/g, '\\$&')} may be at most`));
      }
    });
  });

  describe('/v1/responses and /v1/messages name their own fields', () => {
    it('the openai client reads max_output_tokens and text.format; the Anthropic one temperature and max_tokens', async () => {
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ max_output_tokens: 0 }, 'max_output_tokens'],
        [{ max_output_tokens: 10_000_000 }, 'max_output_tokens'],
        [{ text: { format: { type: 'json_schema', name: 'x', schema: { type: 'bogus' } } } }, 'text.format.schema'],
        [{ tools: [{ type: 'function', name: 'has space', parameters: { type: 'object' } }] }, 'tools[0].name'],
      ];
      for (const [extra, param] of cases) {
        const err = (await client.responses
          .create({ model: 'openai/gpt-4.1-mini', input: 'x', ...extra } as never)
          .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
        expect(err, JSON.stringify(extra)).toBeInstanceOf(OpenAI.BadRequestError);
        expect(err.error).toMatchObject({ type: 'invalid_request_error', param });
      }
      for (const [extra, field] of [
        [{ temperature: 7 }, 'temperature'],
        [{ max_tokens: 10_000_000 }, 'max_tokens'],
        [{ top_p: 5 }, 'top_p'],
        [{ stop_sequences: ['a', 7] }, 'stop_sequences.1'],
      ] as const) {
        const res = await post(
          gw.url,
          { model: 'anthropic/claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], ...extra },
          { authorization: `Bearer ${token}`, 'anthropic-version': '2023-06-01' },
          '/v1/messages',
        );
        expect(res.status).toBe(400);
        const body = (await res.json()) as { type: string; error: { type: string; message: string } };
        expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
        expect(body.error.message).toMatch(new RegExp(`^(invalid request: )?${field}[: ]`));
        expect(body.error.message).not.toMatch(/options\.|maxTokens|topP|stopSequences/);
      }
    });
  });

  describe('fields that change the answer are checked, not guessed', () => {
    it('stream, stream_options, tools, tool_choice and response_format of the wrong shape are 400 naming the field', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ stream: 'true' }, 'stream'],
        [{ stream: true, stream_options: 'usage' }, 'stream_options'],
        [{ tools: { type: 'function' } }, 'tools'],
        [{ tool_choice: 'always' }, 'tool_choice'],
        [{ response_format: { type: 'yaml' } }, 'response_format'],
        [{ n: 3 }, 'n'],
      ];
      for (const [extra, param] of cases) {
        const res = await post(
          gw.url,
          { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }], ...extra },
          { authorization: `Bearer ${token}` },
        );
        expect(res.status, param).toBe(400);
        expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
      }
      // Explicit nulls are "not set", as in OpenAI's API.
      const ok = await post(
        gw.url,
        {
          model: 'openai/gpt-4.1-mini',
          messages: [{ role: 'user', content: 'x' }],
          stream: null,
          n: null,
          tools: null,
          tool_choice: null,
          response_format: null,
          stream_options: null,
        },
        { authorization: `Bearer ${token}` },
      );
      expect(ok.status).toBe(200);
    });

    // These were dropped or replaced by a default (no schema, no temperature, "auto") on the
    // translated path and answered 200 with another answer than the one asked for.
    it.each<[string, Record<string, unknown>, string, RegExp]>([
      ['/v1/chat/completions', { response_format: { type: 'json_schema' } }, 'response_format.json_schema', /invalid_request_error/],
      [
        '/v1/chat/completions',
        { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'object' } } },
        'response_format.json_schema.schema',
        /invalid_request_error/,
      ],
      [
        '/v1/chat/completions',
        { tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] },
        'tools[0].function.parameters',
        /./,
      ],
      ['/v1/responses', { max_output_tokens: '5' }, 'max_output_tokens', /./],
      ['/v1/responses', { temperature: 'hot' }, 'temperature', /./],
      ['/v1/responses', { tool_choice: 5 }, 'tool_choice', /./],
      ['/v1/responses', { text: 'json' }, 'text', /./],
      ['/v1/responses', { text: { format: 'json_object' } }, 'text.format', /./],
      ['/v1/responses', { text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema', /./],
      ['/v1/responses', { tools: [{ type: 'function', name: 'f', parameters: 'x' }] }, 'tools[0].parameters', /./],
      ['/v1/chat/completions', { stream: true, stream_options: { include_usage: 'true' } }, 'stream_options.include_usage', /./],
      ['/v1/embeddings', { dimensions: '5' }, 'dimensions', /invalid_request_error/],
      [
        '/v1/messages',
        { temperature: 'hot' },
        'temperature',
        /^\{"type":"error","error":\{"type":"invalid_request_error","message":"temperature: /,
      ],
      ['/v1/messages', { tool_choice: 'auto' }, 'tool_choice', /"message":"tool_choice: /],
      ['/v1/messages', { tools: [{ name: 'f', input_schema: 'x' }] }, 'tools.0', /"message":"tools\.0: /],
    ])('%s with %o is a 400 naming %s', async (path, extra, param, shape) => {
      const base =
        path === '/v1/responses'
          ? { model: 'anthropic/claude-sonnet-4-5', input: 'x' }
          : path === '/v1/embeddings'
            ? { model: 'openai/text-embedding-3-small', input: 'x' }
            : { model: 'anthropic/claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] };
      const before = upstream.requests.length;
      const res = await fetch(gw.url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ ...base, ...extra }),
      });
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(text).toMatch(shape);
      if (path !== '/v1/messages') expect((JSON.parse(text) as { error: { param: string } }).error.param).toBe(param);
      expect(upstream.requests.length).toBe(before);
    });
  });

  describe('/v1 routes', () => {
    it('models.retrieve finds provider/model ids and aliases; an unknown id is an OpenAI 404', async () => {
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
      expect(await client.models.retrieve('openai/gpt-4.1-mini')).toMatchObject({
        id: 'openai/gpt-4.1-mini',
        object: 'model',
        owned_by: 'openai',
      });
      expect(await client.models.retrieve('openrouter/openai/gpt-5-mini')).toMatchObject({
        id: 'openrouter/openai/gpt-5-mini',
        owned_by: 'openrouter',
      });
      expect(await client.models.retrieve('fast')).toMatchObject({ id: 'fast', owned_by: 'openai' });
      const err = await client.models.retrieve('openai/nope').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    });

    // decodeURIComponent throws on a malformed escape: these answered a bare 500 "internal error".
    it.each(['%ZZ', 'openai%2Fgpt%E0%A4'])('models.retrieve of "%s" (a malformed percent-escape) is an OpenAI 404', async (id) => {
      for (const headers of [{ authorization: `Bearer ${token}` }, { 'x-api-key': token, 'anthropic-version': '2023-06-01' }] as Array<
        Record<string, string>
      >) {
        const res = await fetch(`${gw.url}/v1/models/${id}`, { headers });
        const text = await res.text();
        expect(res.status, text).toBe(404);
        expect(text).toMatch(/not_found_error/);
        expect(text).toContain(id);
      }
    });

    it('an unknown /v1 path answers in the OpenAI error shape', async () => {
      const res = await fetch(gw.url + '/v1/audio/speech', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: '{}',
      });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
    });
  });
});
