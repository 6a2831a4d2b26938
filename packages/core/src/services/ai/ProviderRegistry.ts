import type { EmbeddingModel, LanguageModel } from 'ai';
import type Micromatch from 'micromatch';
import { lazyRequire } from '../../lib/lazyRequire.js';

const micromatch = lazyRequire<typeof Micromatch>('micromatch');
import {
  isBuiltinProvider,
  type NamedProviderConfig,
  type NamedProviderType,
  type ProviderConfig,
  type ProviderId,
} from '../../config/sections/ai.js';
import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import { loadAiSdk, loadProviderSdk, type ProviderSdks } from './aiSdk.js';
import { canonicalModelId, pinnedFetch, type ModelIdSyntax } from './modelId.js';
import { createNamedEmbeddingModel, createNamedLanguageModel, NAMED_DEFAULT_BASE_URLS, usesCredentialChain } from './namedProviders.js';
import { ModelRegistry } from './ModelRegistry.js';
import { PROVIDER_IDS } from './providerIds.js';
import { loadUpstreamFetch, upstreamFetch } from './upstreamFetch.js';
import type { KeyCheckKind } from './validateProviderKey.js';
import type { PassThroughEndpoint, WireFormat } from './passThrough/wireRequest.js';
import { observedFetch } from '../../observability/observedFetch.js';
import type { UpstreamStats } from '../../observability/UpstreamStats.js';
import type { Metrics } from '../../observability/Metrics.js';

/** The providers' public API bases, used when `ai.providers.<id>.baseUrl` is not set. */
export const DEFAULT_BASE_URLS: Readonly<Record<string, string>> = {
  anthropic: 'https://api.anthropic.com/v1',
  openai: 'https://api.openai.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
  openrouter: 'https://openrouter.ai/api/v1',
};

/** What ai.listProviders reports per provider. No keys, no base URLs (they may name internal hosts). */
export interface ProviderSummary {
  id: ProviderId;
  name: string;
  /** The server pays with its own key (listed in serverProviders and a key is configured). */
  serverPaid: boolean;
  /** Callers may use their own key. */
  byok: boolean;
  defaultModel: string;
  models: number;
  /** Model restrictions are configured. */
  restricted: boolean;
}

/**
 * What stands in for a server key where the provider needs none of ours: a keyless
 * OpenAI-compatible server (a local vLLM or Ollama), or Bedrock / Vertex on the vendor's
 * credential chain. Never sent anywhere: the model factories leave the key out for it.
 */
export const NO_SERVER_KEY = '\u0000no-server-key';

/**
 * The providers as configured (the four built-ins and the named ones of `ai.providers`): keys,
 * base URLs, default models and model restrictions, and the AI SDK model objects that call them.
 */
/** Pinned fetches kept (provider × model × base URL). */
const FETCH_CACHE_SIZE = 1024;

export class ProviderRegistry {
  readonly models: ModelRegistry;
  private readonly ai: ResolvedConfig['ai'];
  private readonly serverProviders: ReadonlySet<ProviderId>;
  private readonly all: readonly ProviderId[];
  private readonly named: Record<ProviderId, NamedProviderConfig>;
  /**
   * The pinned, observed fetch of each provider, model and base URL, made once: it parses its base
   * URL and builds two closures, which every call paid for (a pass-through call gets one per attempt).
   */
  private readonly fetches = new Map<string, typeof globalThis.fetch>();

  /** `metrics`: where upstream calls are counted (runtime.metrics); absent when metrics are off. */
  constructor(
    config: ResolvedConfig,
    private readonly metrics?: Metrics,
    private readonly upstreamStats?: UpstreamStats,
  ) {
    this.ai = config.ai;
    this.serverProviders = new Set(config.serverProviders);
    this.named = Object.fromEntries(Object.entries(config.ai.providers).filter((e): e is [string, NamedProviderConfig] => 'type' in e[1]));
    this.models = new ModelRegistry(config.ai.models, this.named);
    this.all = [...PROVIDER_IDS, ...Object.keys(this.named)];
  }

  /** Every provider: the four built-ins, then the named ones in config order. */
  ids(): readonly ProviderId[] {
    return this.all;
  }

  has(provider: string): boolean {
    return isBuiltinProvider(provider) || Object.hasOwn(this.named, provider);
  }

  /** BAD_REQUEST for an id that is neither a built-in nor a configured named provider. */
  assertKnown(provider: string): ProviderId {
    if (!this.has(provider)) {
      throw new CoreError('BAD_REQUEST', `unknown provider "${provider.slice(0, 50)}"; configured: ${this.all.join(', ')}`, {
        details: { reason: 'unknown_provider' },
      });
    }
    return provider;
  }

  /**
   * The setting that chooses the OpenAI wire for `provider` when it is on the Responses API (the
   * default of `openai` and Azure), else undefined: an upstream that 404s that API is most likely
   * a Chat Completions server, and the error names the setting (mapUpstreamError).
   */
  responsesApiSetting(provider: ProviderId): string | undefined {
    const named = this.named[provider];
    if (named) return named.type === 'azure' && named.api !== 'chat' ? `ai.providers.${provider}.api` : undefined;
    if (provider !== 'openai') return undefined;
    const own = this.ai.providers.openai;
    return own && 'api' in own && own.api === 'chat' ? undefined : 'ai.providers.openai.api';
  }

  /** A named provider's type, or undefined for a built-in. */
  namedType(provider: ProviderId): NamedProviderType | undefined {
    return this.named[provider]?.type;
  }

  private conf(provider: ProviderId): Partial<ProviderConfig> {
    return this.ai.providers[provider] ?? {};
  }

  baseUrl(provider: ProviderId): string {
    const set = this.conf(provider).baseUrl?.replace(/\/+$/, '');
    if (set) return set;
    const named = this.named[provider];
    return named ? NAMED_DEFAULT_BASE_URLS(named) : DEFAULT_BASE_URLS[provider]!;
  }

  /** A named provider that needs no key of ours (keyless OpenAI-compatible, credential chains). */
  private keyless(provider: ProviderId): boolean {
    const named = this.named[provider];
    return named !== undefined && usesCredentialChain(named);
  }

  /**
   * The server's key, only for providers the server pays for (listed in serverProviders);
   * `NO_SERVER_KEY` for a server-paid provider that authenticates without one.
   */
  serverKey(provider: ProviderId): string | undefined {
    if (!this.serverProviders.has(provider)) return undefined;
    const key = this.conf(provider).apiKey;
    return key ? key : this.keyless(provider) ? NO_SERVER_KEY : undefined;
  }

  /** Providers listed in serverProviders that have no key configured (a startup warning). */
  serverProvidersWithoutKey(): ProviderId[] {
    return [...this.serverProviders].filter((p) => !this.conf(p).apiKey && !this.keyless(p));
  }

  /**
   * The check request of a server-paid provider (RegistryProbe): its kind and the server key.
   * Undefined when the server does not pay for it, or it signs its requests (Bedrock, Vertex).
   */
  keyCheck(provider: ProviderId): { kind: KeyCheckKind; apiKey: string | undefined } | undefined {
    const key = this.serverKey(provider);
    if (key === undefined) return undefined;
    const apiKey = key === NO_SERVER_KEY ? undefined : key;
    const type = this.namedType(provider);
    if (type === undefined) return { kind: provider as KeyCheckKind, apiKey };
    if (type === 'bedrock' || type === 'vertex') return undefined;
    return { kind: type === 'azure' ? 'azure' : 'bearer', apiKey };
  }

  /** Model id syntax of a provider (modelId.ts): path-safe tokens unless the id travels in a body. */
  private syntax(provider: ProviderId): ModelIdSyntax {
    const type = this.namedType(provider);
    if (type === undefined) return provider === 'openrouter' ? 'vendor' : 'token';
    return type === 'bedrock' || type === 'vertex' ? 'token' : 'body';
  }

  isByokProvider(provider: ProviderId): boolean {
    return this.ai.byokProviders.includes(provider);
  }

  defaultModel(provider: ProviderId): string {
    return this.conf(provider).defaultModel ?? this.models.bundledDefaultModel(provider);
  }

  /**
   * allowedModels (when set) must match and blockedModels must not. micromatch globs, compared
   * with the canonical id (modelId.ts) and without regard to case, so no spelling of a blocked
   * model (`models/gemini-2.5-pro`, `Gemini-2.5-Pro`) passes. An id of invalid syntax is never allowed.
   */
  isModelAllowed(provider: ProviderId, model: string): boolean {
    let id: string;
    try {
      id = canonicalModelId(provider, model, this.syntax(provider));
    } catch {
      return false;
    }
    const { allowedModels, blockedModels } = this.conf(provider);
    const patterns = (list: string[]) => (provider === 'google' ? list.map((p) => p.replace(/^models\//, '')) : list);
    if (allowedModels && allowedModels.length > 0 && !micromatch().isMatch(id, patterns(allowedModels), { nocase: true })) return false;
    if (blockedModels && blockedModels.length > 0 && micromatch().isMatch(id, patterns(blockedModels), { nocase: true })) return false;
    return true;
  }

  /**
   * The canonical id of an allowed model: INVALID_PARAMS for a malformed id, FORBIDDEN for one the
   * restrictions refuse. Use the returned id, not the input, from here on.
   */
  assertModelAllowed(provider: ProviderId, model: string): string {
    const id = canonicalModelId(provider, model, this.syntax(provider));
    if (!this.isModelAllowed(provider, id)) {
      throw new CoreError('FORBIDDEN', `model "${model.slice(0, 200)}" is not allowed for provider ${provider}`, {
        details: { reason: 'model_not_allowed', provider },
      });
    }
    return id;
  }

  /**
   * Model ids usable with the provider, after restrictions: the registry's models plus the
   * configured default model and any literal (non-glob) allowedModels entries.
   */
  allowedModels(provider: ProviderId, kind: 'language' | 'embedding' = 'language'): string[] {
    const candidates = new Set(
      this.models
        .models(provider)
        .filter((m) => (m.kind ?? 'language') === kind)
        .map((m) => m.id),
    );
    if (kind === 'language' && this.defaultModel(provider)) candidates.add(this.defaultModel(provider));
    if (kind === 'language')
      for (const pattern of this.conf(provider).allowedModels ?? [])
        if (!micromatch().scan(pattern).isGlob && this.models.get(provider, pattern)?.kind !== 'embedding') candidates.add(pattern);
    return [...candidates].filter((m) => this.isModelAllowed(provider, m)).sort();
  }

  summary(provider: ProviderId): ProviderSummary {
    const c = this.conf(provider);
    return {
      id: provider,
      name: this.models.providerName(provider),
      serverPaid: this.serverKey(provider) !== undefined,
      byok: this.isByokProvider(provider),
      defaultModel: this.defaultModel(provider),
      models: this.allowedModels(provider).length,
      restricted: Boolean(c.allowedModels?.length || c.blockedModels?.length),
    };
  }

  /**
   * An AI SDK model calling `provider` with `apiKey` at the configured base URL, over our
   * keep-alive `upstreamFetch`. Creating one costs about 1 µs, so models are not cached (a cache
   * keyed by API key would also keep callers' keys in memory).
   */
  async languageModel(
    provider: ProviderId,
    modelId: string,
    apiKey: string,
    opts: { strictJsonSchema?: boolean; stopSequences?: boolean } = {},
  ): Promise<LanguageModel> {
    // Checked here as well, so no caller can hand an unchecked id to an SDK that builds URLs from it.
    const model = canonicalModelId(provider, modelId, this.syntax(provider));
    const baseURL = this.baseUrl(provider);
    const fetch = this.fetchFor(provider, model, baseURL);
    const named = this.named[provider];
    if (named)
      return createNamedLanguageModel(named, provider, { model, apiKey: apiKey === NO_SERVER_KEY ? undefined : apiKey, baseURL, fetch });
    switch (provider) {
      case 'anthropic':
        return (await loadProviderSdk('anthropic')).createAnthropic({ apiKey, baseURL, fetch })(model);
      case 'openai': {
        const openai = (await loadProviderSdk('openai')).createOpenAI({ apiKey, baseURL, fetch });
        // The Responses API takes no stop sequences (the AI SDK would drop them with a warning and
        // the model would not stop on them): a call that sends some goes to Chat Completions, which
        // honours them, or refuses them for a model that does not (OpenAI's own 400, passed on).
        const chat =
          opts.stopSequences || (this.ai.providers.openai && 'api' in this.ai.providers.openai && this.ai.providers.openai.api === 'chat');
        return chat ? openai.chat(model) : openai(model);
      }
      case 'google':
        return (await loadProviderSdk('google')).createGoogleGenerativeAI({ apiKey, baseURL, fetch })(model);
      case 'openrouter':
        // OpenRouter takes the strictness of structured output per model, not per call.
        return (await loadProviderSdk('openrouter')).createOpenRouter({ apiKey, baseURL, fetch })(
          model,
          opts.strictJsonSchema === undefined ? {} : { structuredOutputs: { strict: opts.strictJsonSchema } },
        );
    }
    throw new CoreError('BAD_REQUEST', `unknown provider "${provider.slice(0, 50)}"`, { details: { reason: 'unknown_provider' } });
  }

  /**
   * What the first AI calls would import, imported now (the server calls it once after it listens,
   * off the request path: docs/operations.md, "Warm start"): the AI SDK, the upstream HTTP client
   * and the SDK package of every built-in provider the server pays for. Only on a server that pays
   * for a provider (a default or BYOK-only server keeps loading them on first use: its idle memory
   * stays small); named providers' packages still load with their first call. Only imports:
   * nothing is sent, nothing charged. False when there was nothing to warm.
   */
  async prewarm(): Promise<boolean> {
    const served = this.all.filter((p) => this.serverKey(p) !== undefined);
    if (served.length === 0) return false;
    const builtIn = served.filter((p): p is keyof ProviderSdks => !this.named[p] && (PROVIDER_IDS as readonly string[]).includes(p));
    await Promise.all([loadAiSdk(), loadUpstreamFetch(), ...builtIn.map((p) => loadProviderSdk(p))]);
    return true;
  }

  /**
   * Where a call in `format` goes on the pass-through path (docs/ai.md#pass-through) when this
   * target speaks that format itself, with the URL, auth headers and fetch its AI SDK provider
   * would use; undefined when it takes the SDK path. OpenAI Chat Completions: `openai` (OpenAI
   * serves Chat Completions whichever wire its SDK model uses), `openrouter` and named
   * `openai-compatible` providers; Anthropic Messages: `anthropic`; Responses: `openai`. Every other provider type
   * (Google, Azure's deployments and api-version, Bedrock's and Vertex's signing, the vendor
   * packages' own quirks: Mistral, Groq, xAI, DeepSeek) keeps the SDK path.
   */
  passThroughEndpoint(provider: ProviderId, modelId: string, apiKey: string, format: WireFormat): PassThroughEndpoint | undefined {
    const named = this.named[provider];
    const key = apiKey === NO_SERVER_KEY ? undefined : apiKey;
    const bearer: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
    let path: string;
    let headers: Record<string, string>;
    let maxTokensField: PassThroughEndpoint['maxTokensField'] = 'max_tokens';
    if (format === 'openai-chat') {
      if (named ? named.type !== 'openai-compatible' : provider !== 'openai' && provider !== 'openrouter') return undefined;
      path = '/chat/completions';
      headers = { ...(named?.headers ?? {}), ...bearer };
      if (provider === 'openai') maxTokensField = 'max_completion_tokens';
    } else if (format === 'openai-responses') {
      // OpenAI's own API (whichever wire its SDK model uses); OpenRouter's and the compatible servers' Responses support varies.
      if (named || provider !== 'openai') return undefined;
      path = '/responses';
      headers = bearer;
      maxTokensField = 'max_output_tokens';
    } else {
      if (named || provider !== 'anthropic') return undefined;
      path = '/messages';
      // As @ai-sdk/anthropic sends them.
      headers = { 'anthropic-version': '2023-06-01', ...(key ? { 'x-api-key': key } : {}) };
    }
    const model = canonicalModelId(provider, modelId, this.syntax(provider));
    const baseURL = this.baseUrl(provider);
    headers['content-type'] = 'application/json';
    return { format, url: baseURL + path, model, headers, fetch: this.fetchFor(provider, model, baseURL), maxTokensField };
  }

  /**
   * Pinned to the base URL (no input can change host, path prefix or query); spans, trace
   * propagation and upstream metrics per HTTP attempt (observability/observedFetch).
   */
  private fetchFor(provider: ProviderId, model: string, baseURL: string) {
    const key = `${provider}\n${model}\n${baseURL}`;
    let fetch = this.fetches.get(key);
    if (!fetch) {
      // Bounded: a model id may come from the caller; emptied when full, as the billing shard cache is.
      if (this.fetches.size >= FETCH_CACHE_SIZE) this.fetches.clear();
      fetch = pinnedFetch(
        baseURL,
        observedFetch(upstreamFetch, provider, model, this.metrics, this.upstreamStats),
        this.namedType(provider) === 'azure' ? ['api-version'] : [],
      );
      this.fetches.set(key, fetch);
    }
    return fetch;
  }

  /**
   * An AI SDK embedding model, for providers that have embedding models: OpenAI, Google,
   * OpenRouter (OpenAI's wire format) and the named providers whose SDK package has them.
   */
  async embeddingModel(provider: ProviderId, modelId: string, apiKey: string): Promise<EmbeddingModel> {
    const model = canonicalModelId(provider, modelId, this.syntax(provider));
    const baseURL = this.baseUrl(provider);
    const fetch = this.fetchFor(provider, model, baseURL);
    const named = this.named[provider];
    if (named)
      return createNamedEmbeddingModel(named, provider, { model, apiKey: apiKey === NO_SERVER_KEY ? undefined : apiKey, baseURL, fetch });
    switch (provider) {
      case 'openai':
        return (await loadProviderSdk('openai')).createOpenAI({ apiKey, baseURL, fetch }).embedding(model);
      case 'google':
        return (await loadProviderSdk('google')).createGoogleGenerativeAI({ apiKey, baseURL, fetch }).textEmbeddingModel(model);
      case 'openrouter':
        // OpenRouter's embeddings endpoint speaks OpenAI's wire format.
        return (await loadProviderSdk('openai')).createOpenAI({ apiKey, baseURL, fetch }).embedding(model);
    }
    throw new CoreError('INVALID_PARAMS', `${provider} has no embedding models`, { details: { reason: 'no_embeddings', provider } });
  }
}
