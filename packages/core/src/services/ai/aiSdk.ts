/**
 * The Vercel AI SDK and its four providers' packages, each loaded on first use. They are the
 * heaviest modules we depend on (about 60 MB of RSS and 200 ms of import time together); a server
 * that never generates text should not pay for them at start-up, and a first call to one
 * provider should not pay for the other three (about a quarter of the import's CPU:
 * docs/performance.md, "The cold path").
 */
export interface AiSdk {
  ai: typeof import('ai');
}

/** The built-in providers' SDK packages, by provider id. */
export interface ProviderSdks {
  anthropic: typeof import('@ai-sdk/anthropic');
  openai: typeof import('@ai-sdk/openai');
  google: typeof import('@ai-sdk/google');
  openrouter: typeof import('@openrouter/ai-sdk-provider');
}

let loading: Promise<AiSdk> | undefined;

export function loadAiSdk(): Promise<AiSdk> {
  loading ??= import('ai').then((ai) => {
    warmPromptSchema(ai);
    return { ai };
  });
  return loading;
}

const importers: { [K in keyof ProviderSdks]: () => Promise<ProviderSdks[K]> } = {
  anthropic: () => import('@ai-sdk/anthropic'),
  openai: () => import('@ai-sdk/openai'),
  google: () => import('@ai-sdk/google'),
  openrouter: () => import('@openrouter/ai-sdk-provider'),
};
const providerLoading: { [K in keyof ProviderSdks]?: Promise<ProviderSdks[K]> } = {};

/** One built-in provider's SDK package, imported once (with `ai`, which every call needs too). */
export function loadProviderSdk<K extends keyof ProviderSdks>(provider: K): Promise<ProviderSdks[K]> {
  const cached = providerLoading[provider] as Promise<ProviderSdks[K]> | undefined;
  if (cached) return cached;
  const started = Promise.all([importers[provider](), loadAiSdk()]).then(([sdk]) => sdk);
  providerLoading[provider] = started as (typeof providerLoading)[K];
  return started;
}

/**
 * Every generateText / streamText call validates its messages against a fresh
 * `z.array(modelMessageSchema)` (the SDK's standardizePrompt). Zod 4 checks each new container
 * for reference cycles by walking its whole subtree, and it caches that answer per schema only
 * once it is certain: a `z.lazy` that was never parsed (the JSON values of `providerOptions`,
 * absent from almost every call) leaves it uncertain, so the whole message schema was walked
 * again on every call, about 0.1 ms of CPU (docs/performance.md, "Gateway CPU per call (second
 * session)"). Parsing one message that reaches that lazy resolves it once, after which the
 * walk's answer is cached and validation itself is unchanged. Public API only: if a later
 * zod or SDK version differs, this costs one parse and changes nothing.
 */
function warmPromptSchema(ai: AiSdk['ai']): void {
  ai.modelMessageSchema.safeParse({ role: 'user', content: 'warm-up', providerOptions: { warmUp: { value: [null, { nested: true }] } } });
}
