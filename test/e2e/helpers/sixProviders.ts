import { afterAll, beforeAll } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  PROVIDERS,
  rpcCall,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './aiGateway.js';
import type { ConfigInput } from '@ai-backend/core';
import type { Mode } from './testServer.js';
import type { V1Path } from './describeMatrix.js';

/** The two named providers of the wire-format tests, both pointed at the test upstream. */
export const NAMED_MODELS = { local: 'local/org/llama-3-8b', mist: 'mist/mistral-small-latest' } as const;
/** One chat model per provider of the six-provider server, as `/v1` clients name them. */
export const CHAT_MODELS: Record<string, string> = {
  anthropic: 'anthropic/claude-sonnet-4-5',
  openai: 'openai/gpt-4.1-mini',
  google: 'google/gemini-2.5-flash',
  openrouter: 'openrouter/openai/gpt-5-mini',
  ...NAMED_MODELS,
};

/**
 * A server with six providers: the four built-ins and two named ones, `local` (openai-compatible,
 * keyless, as a local vLLM) and `mist` (the AI SDK's Mistral package), all server-paid. `ai` is
 * merged over the providers (aliases, fallbacks, breaker settings); `mode` as in startAiServer.
 */
export function startSixProviderServer(
  upstream: TestUpstream,
  ai: Record<string, unknown> = {},
  over: ConfigInput = {},
  mode: Mode = 'listening',
  path?: V1Path,
): Promise<AiServer> {
  return startAiServer(
    upstream,
    {
      storage: { type: 'memory' },
      serverProviders: [...PROVIDERS, 'local', 'mist'],
      ...over,
      ai: {
        providers: {
          ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers,
          local: {
            type: 'openai-compatible',
            name: 'Local vLLM',
            baseUrl: upstream.namedBaseUrl('local'),
            models: {
              'org/llama-3-8b': { inputUsdPerMTok: 0.1, outputUsdPerMTok: 0.2 },
              'bge-small': { kind: 'embedding', inputUsdPerMTok: 0.02 },
            },
          },
          mist: {
            type: 'mistral',
            baseUrl: upstream.namedBaseUrl('mist', 'mistral'),
            apiKey: 'mistral-server-key',
            byok: true,
            defaultModel: 'mistral-small-latest',
            models: {
              'mistral-small-latest': { inputUsdPerMTok: 0.2, outputUsdPerMTok: 0.6 },
              'mistral-embed': { kind: 'embedding', inputUsdPerMTok: 0.1 },
            },
          },
        },
        ...ai,
      },
    } as ConfigInput,
    { mode, ...(path ? { path } : {}) },
  );
}

/** A signed-in user credited with `tokens`, and their balance afterwards. */
export async function fundedUser(gw: AiServer, adminToken: string, sub: string, tokens: number): Promise<string> {
  await creditTokens(gw.url, adminToken, sub, tokens, `k-${sub}`);
  return tokenFor(sub);
}

export async function balanceOf(gw: AiServer, token: string): Promise<number> {
  return (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
}

/** The platform fee of a call using `n` tokens (billing.platformFeeRate 0.1). */
export const fee = (n: number) => Math.ceil(n * 0.1);

/** The error a client call rejects with. */
export async function rejectionOf<E = Error & { status?: number }>(p: Promise<unknown>): Promise<E> {
  try {
    await p;
  } catch (e) {
    return e as E;
  }
  throw new Error('expected an error');
}

/**
 * The set-up the wire-format suites share: a test upstream and a six-provider server per
 * describeMatrix mode, started before the suite's tests and stopped after them, an administrator,
 * and users credited through it (named `<prefix>-<n>`, so suites never share a balance).
 */
export function sixProviderSuite(mode: Mode, prefix: string, upstreamOptions?: Parameters<typeof createTestUpstream>[0], path?: V1Path) {
  let users = 0;
  const suite = {
    upstream: undefined as unknown as TestUpstream,
    gw: undefined as unknown as AiServer,
    admin: '',
    /** A new user's bearer token, credited with `tokens`. */
    fundedToken: (tokens: number) => fundedUser(suite.gw, suite.admin, `${prefix}-${++users}`, tokens),
    balanceOf: (token: string) => balanceOf(suite.gw, token),
  };
  beforeAll(async () => {
    suite.upstream = await createTestUpstream(upstreamOptions);
    suite.gw = await startSixProviderServer(suite.upstream, {}, {}, mode, path);
    suite.admin = await tokenFor('ops-admin', { admin: true });
  });
  afterAll(async () => {
    await suite.gw?.stop();
    await suite.upstream?.close();
  });
  return suite;
}
