/**
 * The Vercel AI SDK and its four providers, loaded on first use. They are the heaviest modules
 * we depend on (about 60 MB of RSS and 200 ms of import time together); a server that never
 * generates text should not pay for them at start-up.
 */
export interface AiSdk {
  ai: typeof import('ai');
  anthropic: typeof import('@ai-sdk/anthropic');
  openai: typeof import('@ai-sdk/openai');
  google: typeof import('@ai-sdk/google');
  openrouter: typeof import('@openrouter/ai-sdk-provider');
}

let loading: Promise<AiSdk> | undefined;

export function loadAiSdk(): Promise<AiSdk> {
  loading ??= Promise.all([
    import('ai'),
    import('@ai-sdk/anthropic'),
    import('@ai-sdk/openai'),
    import('@ai-sdk/google'),
    import('@openrouter/ai-sdk-provider'),
  ]).then(([ai, anthropic, openai, google, openrouter]) => ({ ai, anthropic, openai, google, openrouter }));
  return loading;
}
