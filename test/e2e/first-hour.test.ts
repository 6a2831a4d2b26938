import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { createTRPCClient, httpBatchStreamLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import type { AppRouter } from '@ai-backend/core';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * What a new user meets in the first hour (issue 36), each over a real server and real clients.
 */
let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 8 });
});
afterAll(async () => {
  await upstream.close();
});

describe('the openai provider pointed at a Chat Completions server', () => {
  const servers: AiServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });
  async function gateway(api?: 'chat', extra: { passThrough?: boolean } = {}): Promise<{ gw: AiServer; token: string }> {
    const providers = upstream.aiConfig({ apiKey: SERVER_KEY }).providers;
    // A server that speaks only /v1/chat/completions (404 elsewhere), as llama.cpp, vLLM and Ollama do.
    const gw = await startAiServer(upstream, {
      storage: { type: 'memory' },
      ai: {
        ...extra,
        providers: {
          ...providers,
          openai: { baseUrl: upstream.namedBaseUrl('local', 'openai-chat'), apiKey: SERVER_KEY, ...(api ? { api } : {}) },
        },
      },
    });
    servers.push(gw);
    const admin = await tokenFor('fh-admin', { admin: true });
    await creditTokens(gw.url, admin, 'fh-user', 100_000, 'fh-credit');
    return { gw, token: await tokenFor('fh-user') };
  }

  it("on the default Responses wire: the 502 names the path called and the api: 'chat' setting; the log names the URL, without the key", async () => {
    // The AI SDK path (what ai.generateText always takes) calls /responses. A /v1 Chat Completions
    // call on the pass-through path is forwarded to /chat/completions as sent and works (next test).
    const { gw, token } = await gateway(undefined, { passThrough: false });
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
    const err = await client.chat.completions
      .create({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    const message = (err as Error).message;
    expect(message).toContain('POST /named/openai-chat/local/v1/responses');
    expect(message).toContain("set ai.providers.openai.api: 'chat'");
    expect(message).not.toContain('127.0.0.1');
    const line = gw.logs.find((l) => l.includes('ai: upstream call failed'));
    expect(line).toContain(`${upstream.url}/named/openai-chat/local/v1/responses`);
    expect(line).toContain("ai.providers.openai.api: 'chat'");
    expect(gw.logs.join('\n')).not.toContain(SERVER_KEY);
  });

  it('on the pass-through path a /v1 Chat Completions call reaches /chat/completions whatever the api setting', async () => {
    const { gw, token } = await gateway();
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.choices[0]!.message.role).toBe('assistant');
  });
  it("with api: 'chat' the same server answers", async () => {
    const { gw, token } = await gateway('chat');
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
    const r = await client.chat.completions.create({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.choices[0]!.message.content).toMatch(/^Test reply/);
  });
});

describe('402 when nothing can pay names the kind of key it means', () => {
  let gw: AiServer;
  beforeAll(async () => {
    gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  });
  afterAll(async () => {
    await gw.stop();
  });

  it("to a caller with an aib_ key: the key spends its owner's tokens, the owner needs credit or a provider key (docs/api-keys.md)", async () => {
    const owner = await tokenFor('fh-broke-owner');
    const made = await rpcCall<{ key: string }>(gw.url, owner, 'keys.create', { name: 'ci' });
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: made.result!.key, maxRetries: 0 });
    const err = (await client.chat.completions
      .create({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(402);
    expect(err.message).toContain(
      "insufficient platform tokens and no provider API key: this ai-backend key (aib_...) spends its owner's platform tokens, so the owner needs credit, or a stored provider key (BYOK)",
    );
    const doc = await readFile(new URL('../../docs/api-keys.md', import.meta.url), 'utf8');
    expect(doc.replace(/\s+/g, ' ')).toContain(err.message.replace(/^402 /, '').replace(/\s+/g, ' '));
  });

  it('to a signed-in user: get credit, or store or send a provider key', async () => {
    upstream.reset();
    const r = await rpcCall(gw.url, await tokenFor('fh-broke-user'), 'ai.generateText', { content: 'hi', systemPrompt: 's' });
    expect(r.error?.message).toBe(
      'insufficient platform tokens and no provider API key: get credit, or store or send your own provider key (BYOK)',
    );
    expect(upstream.requests).toHaveLength(0);
  });
});

describe("the README's library example says where it listens", () => {
  it('createServer().start() logs "ai-backend listening on <url>" through the default logger (stderr), as serve prints it', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const snippet = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## In your own app')))![1]!;
    expect(snippet).toContain('port: 8000');
    // An app folder whose node_modules has ai-backend (the built package of this repository) and zod.
    const app = await mkdtemp(path.join(tmpdir(), 'ai-backend-readme-'));
    try {
      await mkdir(path.join(app, 'node_modules'));
      await symlink(fileURLToPath(new URL('../../packages/cli', import.meta.url)), path.join(app, 'node_modules/ai-backend'), 'dir');
      const cliRequire = createRequire(fileURLToPath(new URL('../../packages/cli/package.json', import.meta.url)));
      await symlink(path.dirname(cliRequire.resolve('zod/package.json')), path.join(app, 'node_modules/zod'), 'dir');
      await writeFile(path.join(app, 'server.mjs'), snippet.replace('port: 8000', 'port: 0'));
      const child = spawn(process.execPath, ['server.mjs'], { cwd: app, env: { PATH: process.env.PATH! } });
      let err = '';
      try {
        const url = await new Promise<string>((resolve, reject) => {
          child.stderr.on('data', (d: Buffer) => {
            err += d.toString();
            const m = /"msg":"ai-backend listening on (http:\/\/127\.0\.0\.1:\d+)"/.exec(err);
            if (m) resolve(m[1]!);
          });
          child.once('exit', (code) => reject(new Error(`server.mjs exited ${code}: ${err}`)));
          setTimeout(() => reject(new Error(`no "listening on" line: ${err}`)), 30_000).unref();
        });
        expect((await fetch(url + '/health')).status).toBe(200);
      } finally {
        child.kill('SIGKILL');
      }
    } finally {
      await rm(app, { recursive: true, force: true });
    }
  }, 40_000);
});

describe('a stream whose upstream answered plain JSON', () => {
  let gw: AiServer;
  let admin: string;
  beforeAll(async () => {
    gw = await startAiServer(upstream, { storage: { type: 'memory' } });
    admin = await tokenFor('fh-json-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
  });

  /** Nothing charged: the hold was released, the balance is whole, no settle. */
  async function nothingCharged(sub: string) {
    const entries = await gw.runtime.billing.ledger.entries(sub);
    expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(0);
    expect(entries.filter((e) => e.kind === 'release')).toHaveLength(1);
    const b = await gw.runtime.billing.balances(sub);
    expect(b.subscription + b.one_time).toBe(100_000);
  }

  for (const model of ['openai/gpt-5-mini', 'google/gemini-2.5-flash', 'openrouter/openai/gpt-5-mini', 'anthropic/claude-sonnet-4-5']) {
    it(`/v1 stream (openai client), ${model}: fails saying so, nothing charged`, async () => {
      const sub = `fh-json-${model.replaceAll('/', '-')}`;
      await creditTokens(gw.url, admin, sub, 100_000, `c-${sub}`);
      upstream.failNext({ kind: 'json' });
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: await tokenFor(sub), maxRetries: 0 });
      let text = '';
      const err = await (async () => {
        const stream = await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      // Anthropic's SDK gives no response headers for a body without events: the message says what it can.
      expect((err as Error).message).toContain(
        model.startsWith('anthropic/')
          ? "anthropic's stream ended without any output or usage. Nothing was charged"
          : 'with plain JSON (content-type application/json), not an event stream',
      );
      expect(text).toBe('');
      await nothingCharged(sub);
    });
  }

  it('tRPC ai.streamText: fails with malformed_response, nothing charged', async () => {
    const sub = 'fh-json-trpc';
    await creditTokens(gw.url, admin, sub, 100_000, `c-${sub}`);
    upstream.failNext({ kind: 'json' });
    const token = await tokenFor(sub);
    const client = createTRPCClient<AppRouter>({
      links: [
        httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${token}` }) }),
      ],
    });
    const stream = await client.ai.streamText.mutate({ content: 'hi', systemPrompt: 's', provider: 'openai' });
    const err = await (async () => {
      for await (const e of stream) expect(e.type).not.toBe('finish');
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TRPCClientError);
    expect((err as TRPCClientError<AppRouter>).message).toContain('not an event stream');
    expect((err as TRPCClientError<AppRouter>).data).toMatchObject({ appCode: 'UPSTREAM_ERROR' });
    await nothingCharged(sub);
  });
});
