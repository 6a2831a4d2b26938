import type { LanguageModel } from 'ai';
import micromatch from 'micromatch';
import type { ProviderConfig, ProviderId } from '../../config/sections/ai.js';
import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../errors/CoreError.js';
import { loadAiSdk } from './aiSdk.js';
import { canonicalModelId, pinnedFetch } from './modelId.js';
import { ModelRegistry } from './ModelRegistry.js';
import { PROVIDER_IDS } from './providerIds.js';
import { upstreamFetch } from './upstreamFetch.js';
import { observedFetch } from '../../observability/observedFetch.js';
import type { Metrics } from '../../observability/Metrics.js';

/** The providers' public API bases, used when `ai.providers.<id>.baseUrl` is not set. */
export const DEFAULT_BASE_URLS: Readonly<Record<ProviderId, string>> = {
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
 * The four providers as configured: keys, base URLs, default models and model restrictions,
 * and the AI SDK model objects that call them.
 */
export class ProviderRegistry {
  readonly models: ModelRegistry;
  private readonly ai: ResolvedConfig['ai'];
  private readonly serverProviders: ReadonlySet<ProviderId>;

  /** `metrics`: where upstream calls are counted (runtime.metrics); absent when metrics are off. */
  constructor(config: ResolvedConfig, private readonly metrics?: Metrics) {
    this.ai = config.ai;
    this.serverProviders = new Set(config.serverProviders);
    this.models = new ModelRegistry(config.ai.models);
  }

  ids(): readonly ProviderId[] {
    return PROVIDER_IDS;
  }

  private conf(provider: ProviderId): ProviderConfig {
    return this.ai.providers[provider] ?? {};
  }

  baseUrl(provider: ProviderId): string {
    return this.conf(provider).baseUrl?.replace(/\/+$/, '') ?? DEFAULT_BASE_URLS[provider];
  }

  /** The server's key, only for providers the server pays for (listed in serverProviders). */
  serverKey(provider: ProviderId): string | undefined {
    if (!this.serverProviders.has(provider)) return undefined;
    const key = this.conf(provider).apiKey;
    return key ? key : undefined;
  }

  /** Providers listed in serverProviders that have no key configured (a startup warning). */
  serverProvidersWithoutKey(): ProviderId[] {
    return [...this.serverProviders].filter((p) => !this.conf(p).apiKey);
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
      id = canonicalModelId(provider, model);
    } catch {
      return false;
    }
    const { allowedModels, blockedModels } = this.conf(provider);
    const patterns = (list: string[]) => (provider === 'google' ? list.map((p) => p.replace(/^models\//, '')) : list);
    if (allowedModels && allowedModels.length > 0 && !micromatch.isMatch(id, patterns(allowedModels), { nocase: true })) return false;
    if (blockedModels && blockedModels.length > 0 && micromatch.isMatch(id, patterns(blockedModels), { nocase: true })) return false;
    return true;
  }

  /**
   * The canonical id of an allowed model: INVALID_PARAMS for a malformed id, FORBIDDEN for one the
   * restrictions refuse. Use the returned id, not the input, from here on.
   */
  assertModelAllowed(provider: ProviderId, model: string): string {
    const id = canonicalModelId(provider, model);
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
  allowedModels(provider: ProviderId): string[] {
    const candidates = new Set(this.models.models(provider).map((m) => m.id));
    candidates.add(this.defaultModel(provider));
    for (const pattern of this.conf(provider).allowedModels ?? []) if (!micromatch.scan(pattern).isGlob) candidates.add(pattern);
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
  async languageModel(provider: ProviderId, modelId: string, apiKey: string, opts: { strictJsonSchema?: boolean } = {}): Promise<LanguageModel> {
    // Checked here as well, so no caller can hand an unchecked id to an SDK that builds URLs from it.
    const model = canonicalModelId(provider, modelId);
    const baseURL = this.baseUrl(provider);
    const sdk = await loadAiSdk();
    // Pinned to the base URL (no input can change host, path prefix or query); spans, trace
    // propagation and upstream metrics per HTTP attempt (observability/observedFetch).
    const fetch = pinnedFetch(baseURL, observedFetch(upstreamFetch, provider, model, this.metrics));
    switch (provider) {
      case 'anthropic':
        return sdk.anthropic.createAnthropic({ apiKey, baseURL, fetch })(model);
      case 'openai': {
        const openai = sdk.openai.createOpenAI({ apiKey, baseURL, fetch });
        return this.conf('openai').api === 'chat' ? openai.chat(model) : openai(model);
      }
      case 'google':
        return sdk.google.createGoogleGenerativeAI({ apiKey, baseURL, fetch })(model);
      case 'openrouter':
        // OpenRouter takes the strictness of structured output per model, not per call.
        return sdk.openrouter.createOpenRouter({ apiKey, baseURL, fetch })(model, opts.strictJsonSchema === undefined ? {} : { structuredOutputs: { strict: opts.strictJsonSchema } });
    }
  }
}
