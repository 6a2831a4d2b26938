import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig, ConfigError } from '../../config/resolveConfig.js';
import { alice, createAiHarness, rejection, SERVER_KEY, type AiHarness } from './__tests__/aiHarness.js';
import { createTestUpstream, type TestUpstream } from '@ai-backend/test-utils';

/** Named providers (`ai.providers.<id>` with a `type`) beside the four built-ins. */
async function harness(extra: Record<string, unknown> = {}): Promise<AiHarness> {
  const upstream = await createTestUpstream();
  return createAiHarness(
    {
      serverProviders: ['anthropic', 'openai', 'google', 'openrouter', 'local', 'mist'],
      ai: {
        providers: {
          ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers,
          // Keyless, as a local vLLM would be.
          local: {
            type: 'openai-compatible',
            baseUrl: upstream.namedBaseUrl('local'),
            models: { 'org/llama-3-8b': { inputUsdPerMTok: 0.1, outputUsdPerMTok: 0.2, contextWindow: 8192 } },
          },
          mist: {
            type: 'mistral',
            baseUrl: upstream.namedBaseUrl('mist', 'mistral'),
            apiKey: 'mistral-key',
            defaultModel: 'mistral-small-latest',
            byok: true,
            models: {
              'mistral-small-latest': { inputUsdPerMTok: 0.2, outputUsdPerMTok: 0.6 },
              'mistral-embed': { kind: 'embedding', inputUsdPerMTok: 0.1 },
            },
          },
        },
        ...extra,
      },
    },
    {},
    { upstream },
  );
}

describe('named providers', () => {
  let h: AiHarness;
  afterEach(async () => {
    await h.close();
    await h.upstream.close();
  });

  it('generate over an openai-compatible and a Mistral (SDK package) provider, charged exactly', async () => {
    h = await harness();
    await h.credit(alice.sub, 10_000);
    const before = await h.balance(alice.sub);
    const r = await h.caller(alice).ai.generateText({ content: 'Hello local', systemPrompt: '', model: 'local' });
    expect(r.data).toMatchObject({ provider: 'local', model: 'org/llama-3-8b' });
    const req = h.upstream.requests.at(-1)!;
    expect(req).toMatchObject({ provider: 'local', path: '/named/openai-chat/local/v1/chat/completions', model: 'org/llama-3-8b' });
    expect(req.apiKey).toBeUndefined(); // keyless: no Authorization header at all
    const usage = r.data.usage as { inputTokens: number; outputTokens: number };
    expect(await h.balance(alice.sub)).toBe(before - r.tokenUsage!.tokensCharged);
    expect(r.tokenUsage!.tokensUsed).toBe(usage.inputTokens + usage.outputTokens);

    const m = await h.caller(alice).ai.generateText({ content: 'Hello mistral', systemPrompt: 'be brief', model: 'mist' });
    expect(m.data).toMatchObject({ provider: 'mist', model: 'mistral-small-latest' });
    expect(h.upstream.requests.at(-1)).toMatchObject({ provider: 'mist', apiKey: 'mistral-key', system: 'be brief' });
  });

  it('streams from Mistral in its own stream format, usage on the last chunk', async () => {
    h = await harness();
    await h.credit(alice.sub, 10_000);
    const stream = await h.caller(alice).ai.streamText({ content: 'stream please', systemPrompt: '', model: 'mist' });
    let text = '';
    let finish: { tokenUsage?: { tokensUsed: number } } | undefined;
    for await (const e of stream) {
      if (e.type === 'text') text += e.delta;
      if (e.type === 'finish') finish = e.result as never;
    }
    expect(text).toContain('Test reply from mistral');
    expect(finish?.tokenUsage?.tokensUsed).toBeGreaterThan(16);
  });

  it('lists every provider, models with prices, BYOK where allowed', async () => {
    h = await harness();
    const c = h.caller(null).ai;
    const list = await c.listProviders();
    expect(list.providers.map((p) => p.id)).toEqual(['anthropic', 'openai', 'google', 'openrouter', 'local', 'mist']);
    expect(list.providers.find((p) => p.id === 'local')).toMatchObject({ serverPaid: true, byok: false, defaultModel: 'org/llama-3-8b' });
    expect((await c.listProvidersBYOK()).providers.map((p) => p.id)).toContain('mist');
    expect((await c.listProvidersBYOK()).providers.map((p) => p.id)).not.toContain('local');
    const all = (await c.listAllowedModels()) as { models: Record<string, string[]> };
    expect(all.models.mist).toEqual(['mistral-small-latest']); // the embedding model is not a chat model
    expect(all.models.local).toEqual(['org/llama-3-8b']);
    // The spec's enums stay exactly the spec's: four values for provider, three for validateProvider.
    expect((await rejection(c.listAllowedModels({ provider: 'local' as never }))).message).toMatch(/provider/);
    expect((await rejection(c.validateProvider({ provider: 'openrouter' as never, apiKey: 'k' }))).message).toMatch(/provider/);
    expect((await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: '', model: 'nope/x' }))).details).toMatchObject({
      reason: 'unknown_model',
    });
    expect(
      (await rejection(h.caller(alice).ai.generateText({ content: 'x', systemPrompt: '', model: 'mist', provider: 'openai' }))).details,
    ).toMatchObject({ field: 'model' });
  });

  it('BYOK: a caller key goes to a provider that allows it, and is refused by one that does not', async () => {
    h = await harness();
    const r = await h.caller(null).ai.generateText({ content: 'byok', systemPrompt: '', model: 'mist', apiKey: 'caller-mistral-key' });
    expect(r.usageInfo?.estimatedCostUsd).toBeGreaterThan(0);
    expect(h.upstream.requests.at(-1)!.apiKey).toBe('caller-mistral-key');
    expect(
      (await rejection(h.caller(null).ai.generateText({ content: 'byok', systemPrompt: '', model: 'local/org/llama-3-8b', apiKey: 'k' })))
        .details,
    ).toMatchObject({ reason: 'byok_not_allowed' });
  });

  it("BYOK vault: a key stored for a named provider pays for the caller's calls to it", async () => {
    h = await harness();
    const c = h.caller(alice);
    expect(await c.auth.storeProviderKey({ email: alice.email!, provider: 'mist', apiKey: 'sk-alice-mistral-0001' })).toMatchObject({
      success: true,
      provider: 'mist',
    });
    expect((await c.auth.getUserProviders({ email: alice.email! })).providers).toEqual(['mist']);
    await c.user.configureBYOK({ enabled: true, providers: {} });
    expect((await c.user.getBYOKStatus()).providers.mist).toMatchObject({ enabled: true, hasApiKey: true, last4: '0001' });
    // No platform tokens: billing picks the stored key.
    const r = await c.ai.generateText({ content: 'with my key', systemPrompt: '', model: 'mist' });
    expect(r.usageInfo).toBeDefined();
    expect(h.upstream.requests.at(-1)).toMatchObject({ provider: 'mist', apiKey: 'sk-alice-mistral-0001' });
    // Refused: a provider that takes no own keys, an unknown one, a built-in (storeUserKey's job).
    expect(
      (await rejection(c.auth.storeProviderKey({ email: alice.email!, provider: 'local', apiKey: 'sk-alice-local-0001' }))).details,
    ).toMatchObject({ reason: 'byok_not_allowed' });
    expect(
      (await rejection(c.auth.storeProviderKey({ email: alice.email!, provider: 'nope', apiKey: 'sk-alice-nope-00001' }))).details,
    ).toMatchObject({ reason: 'unknown_provider' });
    expect(
      (await rejection(c.auth.storeProviderKey({ email: alice.email!, provider: 'openai', apiKey: 'sk-alice-openai-0001' }))).details,
    ).toMatchObject({ reason: 'unknown_provider' });
    expect(await c.auth.deleteProviderKey({ email: alice.email!, provider: 'mist' })).toMatchObject({ deleted: true });
    expect(h.logs.join('\n')).not.toContain('sk-alice-mistral-0001');
  });

  it('falls back from a failing named provider to another, breaker opens, only the serving target charged', async () => {
    h = await harness({ circuitBreaker: { failureThreshold: 2, cooldownMs: 60_000, windowMs: 60_000 } });
    await h.credit(alice.sub, 100_000);
    h.upstream.failProvider('mist', { kind: 'status', status: 503 });
    for (let i = 0; i < 3; i++) {
      const before = await h.balance(alice.sub);
      const r = await h
        .caller(alice)
        .ai.generateText({ content: `fallback ${i}`, systemPrompt: '', model: 'mist/mistral-small-latest', fallbacks: ['local'] });
      expect(r.data.provider).toBe('local');
      expect(await h.balance(alice.sub)).toBe(before - r.tokenUsage!.tokensCharged);
      const reason = (r.data.attempts as Array<{ reason: string }>)[0]!.reason;
      expect(reason).toBe(i < 2 ? 'upstream_5xx' : 'circuit_open');
    }
    expect(h.upstream.requests.filter((q) => q.provider === 'mist')).toHaveLength(2);
    const health = await h.caller(null).ai.getRegistryHealth();
    expect((health as { providers: Record<string, { breaker: string }> }).providers.mist!.breaker).toBe('open');
  });
});

describe('the other vendor packages against OpenAI-wire upstreams', () => {
  // Groq, xAI and DeepSeek speak OpenAI's chat wire format, Azure (api: 'chat') too under its
  // `api-key` header (a non-Azure host takes the base URL as is): each through its own AI SDK package.
  const cases = [
    { id: 'gq', type: 'groq', base: (u: TestUpstream) => u.namedBaseUrl('gq') },
    { id: 'grok', type: 'xai', base: (u: TestUpstream) => u.namedBaseUrl('grok') },
    { id: 'ds', type: 'deepseek', base: (u: TestUpstream) => u.namedBaseUrl('ds') },
    { id: 'az', type: 'azure', base: (u: TestUpstream) => u.namedBaseUrl('az'), extra: { api: 'chat' } },
  ] as const;
  for (const c of cases) {
    it(`${c.type}: generateText and streamText, key sent, charged`, async () => {
      const upstream = await createTestUpstream();
      const h = await createAiHarness(
        {
          serverProviders: [c.id],
          ai: {
            providers: {
              ...upstream.aiConfig().providers,
              [c.id]: {
                type: c.type,
                baseUrl: c.base(upstream),
                apiKey: `${c.id}-key`,
                defaultModel: 'm-1',
                ...('extra' in c ? c.extra : {}),
              },
            },
          },
        },
        {},
        { upstream },
      );
      try {
        await h.credit(alice.sub, 10_000);
        const r = await h.caller(alice).ai.generateText({ content: 'hello', systemPrompt: 'sys', model: c.id });
        expect(r.data).toMatchObject({ provider: c.id, model: 'm-1' });
        expect(r.tokenUsage!.tokensUsed).toBe((r.data.usage as { totalTokens: number }).totalTokens);
        expect(h.upstream.requests.at(-1)).toMatchObject({ provider: c.id, apiKey: `${c.id}-key`, system: 'sys', content: 'hello' });
        let text = '';
        for await (const e of await h.caller(alice).ai.streamText({ content: 'stream', systemPrompt: '', model: c.id }))
          if (e.type === 'text') text += e.delta;
        expect(text).toContain('Test reply from openai-chat');
      } finally {
        await h.close();
        await upstream.close();
      }
    });
  }
});

describe('Amazon Bedrock through @ai-sdk/amazon-bedrock (Converse API, SigV4)', () => {
  const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';
  async function bedrockHarness(extra: Record<string, unknown>) {
    const upstream = await createTestUpstream();
    const h = await createAiHarness(
      {
        serverProviders: ['bed'],
        ai: {
          providers: {
            ...upstream.aiConfig().providers,
            bed: { type: 'bedrock', region: 'us-east-1', baseUrl: upstream.namedBaseUrl('bed', 'bedrock'), defaultModel: MODEL, ...extra },
          },
        },
      },
      {},
      { upstream },
    );
    return { h, close: async () => (await h.close(), await upstream.close()) };
  }

  it('explicit AWS credentials: the request is SigV4-signed with them, charged by the reported usage', async () => {
    const { h, close } = await bedrockHarness({ accessKeyId: 'AKIAEXPLICIT0001', secretAccessKey: 'explicit-secret' });
    try {
      await h.credit(alice.sub, 10_000);
      const r = await h.caller(alice).ai.generateText({ content: 'hello bedrock', systemPrompt: 'sys', model: 'bed' });
      expect(r.data).toMatchObject({ provider: 'bed', model: MODEL, text: expect.stringContaining('Test reply from bedrock') });
      const req = h.upstream.requests.at(-1)!;
      expect(req).toMatchObject({ provider: 'bed', apiKey: 'AKIAEXPLICIT0001', system: 'sys', content: 'hello bedrock', model: MODEL });
      expect(String(req.headers.authorization)).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIAEXPLICIT0001\/\d{8}\/us-east-1\/bedrock\/aws4_request/,
      );
      expect(r.tokenUsage!.tokensUsed).toBe((r.data.usage as { totalTokens: number }).totalTokens);
    } finally {
      await close();
    }
  });

  it('streams over ConverseStream (binary AWS event-stream): text deltas, usage from the metadata event, charged once', async () => {
    const { h, close } = await bedrockHarness({ accessKeyId: 'AKIAEXPLICIT0001', secretAccessKey: 'explicit-secret' });
    try {
      await h.credit(alice.sub, 10_000);
      const before = await h.balance(alice.sub);
      const stream = await h.caller(alice).ai.streamText({ content: 'stream from bedrock', systemPrompt: '', model: 'bed' });
      let text = '';
      let deltas = 0;
      let finish: { tokenUsage?: { tokensUsed: number; tokensCharged: number } } | undefined;
      for await (const e of stream) {
        if (e.type === 'text') (text += e.delta), deltas++;
        if (e.type === 'finish') finish = e.result as never;
      }
      const req = h.upstream.requests.at(-1)!;
      expect(req.path).toMatch(/\/converse-stream$/);
      expect(text).toContain('Test reply from bedrock');
      expect(deltas).toBeGreaterThan(1);
      expect(finish?.tokenUsage?.tokensUsed).toBeGreaterThan(0);
      expect(await h.balance(alice.sub)).toBe(before - finish!.tokenUsage!.tokensCharged);
    } finally {
      await close();
    }
  });

  it('no key configured: the AWS credential chain (here its environment step) signs the request', async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = 'AKIAFROMCHAIN0002';
    process.env.AWS_SECRET_ACCESS_KEY = 'chain-secret';
    const { h, close } = await bedrockHarness({});
    try {
      await h.credit(alice.sub, 10_000);
      expect((await h.caller(null).ai.listProviders()).providers.find((p) => p.id === 'bed')).toMatchObject({ serverPaid: true });
      await h.caller(alice).ai.generateText({ content: 'chain', systemPrompt: '', model: 'bed' });
      expect(h.upstream.requests.at(-1)!.apiKey).toBe('AKIAFROMCHAIN0002');
    } finally {
      await close();
      if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
      else process.env.AWS_ACCESS_KEY_ID = saved.id;
      if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
      else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    }
  });
});

describe('Google Vertex through @ai-sdk/google-vertex', () => {
  it('express mode (an API key): Gemini wire format, x-goog-api-key, charged', async () => {
    const upstream = await createTestUpstream();
    const h = await createAiHarness(
      {
        serverProviders: ['vx'],
        ai: {
          providers: {
            ...upstream.aiConfig().providers,
            vx: { type: 'vertex', apiKey: 'vx-key', baseUrl: upstream.baseUrls.google, defaultModel: 'gemini-2.5-flash' },
          },
        },
      },
      {},
      { upstream },
    );
    try {
      await h.credit(alice.sub, 10_000);
      const r = await h.caller(alice).ai.generateText({ content: 'hello vertex', systemPrompt: 'sys', model: 'vx' });
      expect(r.data).toMatchObject({ provider: 'vx', model: 'gemini-2.5-flash' });
      expect(h.upstream.requests.at(-1)).toMatchObject({
        path: '/v1beta/models/gemini-2.5-flash:generateContent',
        apiKey: 'vx-key',
        system: 'sys',
      });
      expect(r.tokenUsage!.tokensUsed).toBe((r.data.usage as { totalTokens: number }).totalTokens);
    } finally {
      await h.close();
      await upstream.close();
    }
  });

  it('no key: Google application default credentials (GOOGLE_APPLICATION_CREDENTIALS) mint the bearer token', async () => {
    // A workload-identity (external_account) credentials file: the one ADC kind whose token
    // endpoint is part of the file, so a local STS stands in for Google's.
    const exchanges: Record<string, string>[] = [];
    const sts = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        exchanges.push(Object.fromEntries(new URLSearchParams(body)));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            access_token: 'ya29.adc-token',
            issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
            token_type: 'Bearer',
            expires_in: 3600,
          }),
        );
      });
    });
    await new Promise<void>((resolve) => sts.listen(0, '127.0.0.1', resolve));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'adc-'));
    writeFileSync(path.join(dir, 'subject.jwt'), 'subject-token-from-the-platform');
    writeFileSync(
      path.join(dir, 'adc.json'),
      JSON.stringify({
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/local',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: `http://127.0.0.1:${(sts.address() as AddressInfo).port}/v1/token`,
        credential_source: { file: path.join(dir, 'subject.jwt') },
      }),
    );
    const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = path.join(dir, 'adc.json');
    const upstream = await createTestUpstream();
    const h = await createAiHarness(
      {
        serverProviders: ['vx'],
        ai: {
          providers: {
            ...upstream.aiConfig().providers,
            vx: {
              type: 'vertex',
              project: 'p1',
              location: 'us-central1',
              baseUrl: upstream.baseUrls.google,
              defaultModel: 'gemini-2.5-flash',
            },
          },
        },
      },
      {},
      { upstream },
    );
    try {
      await h.credit(alice.sub, 10_000);
      const before = await h.balance(alice.sub);
      const r = await h.caller(alice).ai.generateText({ content: 'hello adc', systemPrompt: '', model: 'vx' });
      expect(r.data).toMatchObject({ provider: 'vx', model: 'gemini-2.5-flash' });
      expect(exchanges[0]).toMatchObject({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: 'subject-token-from-the-platform',
      });
      expect(String(h.upstream.requests.at(-1)!.headers.authorization)).toBe('Bearer ya29.adc-token');
      expect(await h.balance(alice.sub)).toBe(before - r.tokenUsage!.tokensCharged);
    } finally {
      await h.close();
      await upstream.close();
      sts.close();
      rmSync(dir, { recursive: true, force: true });
      if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
    }
  });

  it('default endpoints follow the SDK: express mode, regional, global and multi-region', async () => {
    const { ProviderRegistry } = await import('../../services/ai/ProviderRegistry.js');
    const reg = new ProviderRegistry(
      resolveConfig({
        ai: {
          providers: {
            ex: { type: 'vertex', apiKey: 'k', defaultModel: 'g' },
            eu: { type: 'vertex', project: 'p1', location: 'europe-west4', defaultModel: 'g' },
            gl: { type: 'vertex', project: 'p1', location: 'global', defaultModel: 'g' },
            us: { type: 'vertex', project: 'p1', location: 'us', defaultModel: 'g' },
            br: { type: 'bedrock', region: 'eu-west-1', defaultModel: 'm' },
          },
        },
      }),
    );
    expect(reg.baseUrl('ex')).toBe('https://aiplatform.googleapis.com/v1/publishers/google');
    expect(reg.baseUrl('eu')).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p1/locations/europe-west4/publishers/google',
    );
    expect(reg.baseUrl('gl')).toBe('https://aiplatform.googleapis.com/v1beta1/projects/p1/locations/global/publishers/google');
    expect(reg.baseUrl('us')).toBe('https://aiplatform.us.rep.googleapis.com/v1beta1/projects/p1/locations/us/publishers/google');
    expect(reg.baseUrl('br')).toBe('https://bedrock-runtime.eu-west-1.amazonaws.com');
  });
});

describe('named provider config', () => {
  it('refuses a named provider without type, a built-in id with type, and unknown ids in lists', () => {
    const bad = (ai: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      try {
        resolveConfig({ ai, ...extra } as never);
        return '';
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
    };
    expect(bad({ providers: { local: { baseUrl: 'http://127.0.0.1:1/v1' } } })).toMatch(/local/);
    expect(bad({ providers: { openai: { type: 'groq' } } })).toMatch(/openai/);
    expect(bad({ providers: { provider_e: { type: 'groq', defaultModel: 'x' } } })).toMatch(/provider_e/);
    expect(bad({}, { serverProviders: ['nope'] })).toMatch(/nope/);
    expect(bad({ fallbacks: ['nope/model'] })).toMatch(/nope/);
    expect(bad({ providers: { vx: { type: 'vertex', defaultModel: 'g' } } })).toMatch(/project/);
    expect(bad({ providers: { br: { type: 'bedrock', defaultModel: 'm' } } })).toMatch(/region/);
    expect(bad({ providers: { az: { type: 'azure', apiKey: 'k', defaultModel: 'm' } } })).toMatch(/resourceName/);
    expect(bad({ providers: { oc: { type: 'openai-compatible', defaultModel: 'm' } } })).toMatch(/baseUrl/);
    expect(bad({ providers: { g: { type: 'groq', defaultModel: 'llama' } }, fallbacks: ['g/llama'], defaultProvider: 'g' })).toBe('');
    const c = resolveConfig({
      ai: { providers: { g: { type: 'groq', defaultModel: 'llama', byok: true } }, defaultProvider: 'provider_b' },
    });
    expect(c.ai.byokProviders).toEqual(['anthropic', 'openai', 'google', 'openrouter', 'g']);
    expect(c.ai.defaultProvider).toBe('openai');
  });
});
