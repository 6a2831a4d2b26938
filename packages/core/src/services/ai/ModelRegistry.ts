import type { ModelInfoOverride, NamedProviderConfig, ProviderId } from '../../config/sections/ai.js';
import { PROVIDER_IDS } from './providerIds.js';
import bundled from './models.json' with { type: 'json' };

/** One model of the registry. Pricing is USD per million tokens; absent when unknown. */
export interface ModelInfo {
  provider: ProviderId;
  id: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  inputUsdPerMTok?: number;
  outputUsdPerMTok?: number;
  /**
   * The prices of a call whose input exceeds `aboveInputTokens` (Gemini 2.5 Pro's prompts over
   * 200k tokens, Claude Sonnet's 1M context): the provider bills every token of such a call at
   * them, so the hold, every money budget and the recorded cost must too.
   */
  longContext?: { aboveInputTokens: number; inputUsdPerMTok: number; outputUsdPerMTok: number };
  /**
   * What the provider bills an input token read from its prompt cache, as a fraction of the input
   * price (long-context prices included): OpenAI's `cached_tokens`, Google's
   * `cachedContentTokenCount`, Anthropic's cache reads. Absent: cached input is priced as input,
   * never below what the provider bills.
   */
  cachedInputRatio?: number;
  /** Accepted input kinds; absent means text only. */
  input?: Array<'text' | 'image' | 'file'>;
  /** 'embedding' models serve ai.embed and /v1/embeddings only; absent means a language model. */
  kind?: 'language' | 'embedding';
  /** Where the entry comes from: the bundled file, the operator's config, or both merged. */
  origin: 'bundled' | 'config' | 'bundled+config';
}

/** What of a call's input its provider bills at another price than input (ModelRegistry.estimateCostUsd). */
export interface CachedInput {
  /** Input tokens (counted in the call's input) read from the provider's prompt cache: priced at the model's `cachedInputRatio`. */
  readTokens?: number | undefined;
  /** Input tokens' worth billed above the input price (Anthropic's cache writes, readWireAnswer.ts). */
  writeExtra?: number | undefined;
}

/** Where the registry data comes from, reported by ai.listProviders and ai.getRegistryHealth. */
export interface RegistrySource {
  name: string;
  retrievedAt: string;
  method: string;
  urls: Record<string, string>;
  /** Entries added or changed by config `ai.models`. */
  overrides: number;
}

interface BundledProvider {
  name: string;
  defaultModel: string;
  models: Record<string, Omit<ModelInfo, 'provider' | 'id' | 'origin'>>;
}

/**
 * Models per provider with context size and pricing: the bundled `models.json` (source and date
 * recorded in the file) merged with the operator's `ai.models` overrides.
 */
export class ModelRegistry {
  private readonly byProvider = new Map<ProviderId, Map<string, ModelInfo>>();
  private readonly overrideCount: number;
  private readonly names = new Map<ProviderId, { name: string; defaultModel: string }>();

  /** `named`: the named providers of `ai.providers` (their `models` are their registry). */
  constructor(
    overrides: Partial<Record<ProviderId, Record<string, ModelInfoOverride>>> = {},
    named: Record<ProviderId, NamedProviderConfig> = {},
  ) {
    let count = 0;
    const data: Record<ProviderId, BundledProvider> = { ...(bundled.providers as Record<ProviderId, BundledProvider>) };
    for (const [id, p] of Object.entries(named)) {
      const firstLanguage = Object.entries(p.models).find(([, m]) => (m.kind ?? 'language') === 'language')?.[0];
      data[id] = { name: p.name ?? id, defaultModel: p.defaultModel ?? firstLanguage ?? Object.keys(p.models)[0] ?? '', models: p.models };
    }
    for (const [provider, entry] of Object.entries(data)) {
      if (!(PROVIDER_IDS as readonly string[]).includes(provider) && !Object.hasOwn(named, provider)) continue;
      this.names.set(provider, { name: entry.name, defaultModel: entry.defaultModel });
      const models = new Map<string, ModelInfo>();
      for (const [id, info] of Object.entries(entry.models))
        models.set(id, { provider, id, ...info, origin: Object.hasOwn(named, provider) ? 'config' : 'bundled' });
      for (const [id, info] of Object.entries(overrides[provider] ?? {})) {
        const base = models.get(id);
        const defined = Object.fromEntries(Object.entries(info).filter(([, v]) => v !== undefined));
        models.set(id, { ...(base ?? { provider, id }), ...defined, origin: base ? 'bundled+config' : 'config' });
        count++;
      }
      this.byProvider.set(provider, models);
    }
    this.overrideCount = count;
  }

  providerName(provider: ProviderId): string {
    return this.names.get(provider)?.name ?? provider;
  }

  /** The bundled default model (config `ai.providers.<id>.defaultModel` takes precedence elsewhere). */
  bundledDefaultModel(provider: ProviderId): string {
    return this.names.get(provider)?.defaultModel ?? '';
  }

  models(provider: ProviderId): ModelInfo[] {
    return [...(this.byProvider.get(provider)?.values() ?? [])];
  }

  get(provider: ProviderId, model: string): ModelInfo | undefined {
    return this.byProvider.get(provider)?.get(model);
  }

  /** Estimated USD cost of an embedding call (input tokens only); undefined without a price. */
  estimateEmbeddingCostUsd(provider: ProviderId, model: string, inputTokens: number): number | undefined {
    const m = this.get(provider, model);
    if (m?.inputUsdPerMTok === undefined) return undefined;
    return Math.round(((inputTokens * m.inputUsdPerMTok) / 1_000_000) * 1e10) / 1e10;
  }

  /**
   * Estimated USD cost of a call (at its long-context prices past their threshold, which counts
   * every input token, cached ones included); undefined when the model has no pricing. `cache`:
   * what of the input the provider bills at another price than input.
   */
  estimateCostUsd(
    provider: ProviderId,
    model: string,
    inputTokens: number,
    outputTokens: number,
    cache: CachedInput = {},
  ): number | undefined {
    const m = this.get(provider, model);
    if (m?.inputUsdPerMTok === undefined || m.outputUsdPerMTok === undefined) return undefined;
    const prices = m.longContext && inputTokens > m.longContext.aboveInputTokens ? m.longContext : m;
    // Never more read tokens than input tokens: a hostile count must not price the input below zero.
    const reads = Math.min(cache.readTokens ?? 0, inputTokens);
    const input = inputTokens - reads + reads * (m.cachedInputRatio ?? 1) + (cache.writeExtra ?? 0);
    const usd = (input * prices.inputUsdPerMTok! + outputTokens * prices.outputUsdPerMTok!) / 1_000_000;
    // Round away float noise (1e-10 USD is far below any price step).
    return Math.round(usd * 1e10) / 1e10;
  }

  source(): RegistrySource {
    const s = bundled.source;
    return { name: s.name, retrievedAt: s.retrievedAt, method: s.method, urls: { ...s.urls }, overrides: this.overrideCount };
  }

  /** Counts for the health report. */
  summary(): { providers: number; models: number; pricedModels: number } {
    let models = 0;
    let priced = 0;
    for (const map of this.byProvider.values()) {
      for (const m of map.values()) {
        models++;
        // An embedding model is priced by its input alone (it has no output tokens).
        if (m.inputUsdPerMTok !== undefined && (m.kind === 'embedding' || m.outputUsdPerMTok !== undefined)) priced++;
      }
    }
    return { providers: this.byProvider.size, models, pricedModels: priced };
  }
}
