import type { BuiltinProviderId, ProviderId } from '../../config/sections/ai.js';
import type { EmbedInput, EmbedOutput } from './runEmbed.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import { CircuitBreaker, type BreakerState } from './CircuitBreaker.js';
import type { Metering } from '../metering/Metering.js';
import type { UpstreamStats } from '../../observability/UpstreamStats.js';
import type { Metrics } from '../../observability/Metrics.js';
import type { RegistrySource } from './ModelRegistry.js';
import { ProviderRegistry, type ProviderSummary } from './ProviderRegistry.js';
import { reachableModels, resolveCallModel, worstCostUsd } from './callModel.js';
import type { CallDeps } from './prepareCall.js';
import type { GenerateTextCall, GenerateTextInput, GenerateTextOutput } from './runGenerateText.js';
import { RegistryProbe, type ProbeResult } from './RegistryProbe.js';
import type { StreamEvent } from './runStreamText.js';
import { SystemPromptStore } from './SystemPromptStore.js';
import { validateProviderKey, type KeyValidation } from './validateProviderKey.js';
import { Routing } from './routing/Routing.js';
import { ResponseCache } from './cache/ResponseCache.js';
import type { RouteReport } from './routing/RouteStats.js';

/** The call engine, loaded by the first AI call (callEngine.ts); one promise for every caller. */
let engine: Promise<typeof import('./callEngine.js')> | undefined;
const loadEngine = () => (engine ??= import('./callEngine.js'));

export interface AiServiceOptions {
  config: ResolvedConfig;
  logger: Logger;
  /** Who pays: the billing service (runtime.billing). */
  metering: Metering;
  /** Where the circuit breaker keeps its state (shared across instances with Redis). */
  storage?: Storage;
  /** Where the registry probe keeps its lease and results (runtime.shared); default `storage`. */
  shared?: Storage;
  /**
   * A signed-in caller's stored key for a provider (the BYOK vault), for fallbacks of BYOK calls
   * to other providers. Absent: BYOK calls fall back only within their own provider.
   */
  storedKey?: (userId: string, provider: ProviderId) => Promise<string | undefined>;
  /** Upstream call metrics (runtime.metrics). */
  metrics?: Metrics;
  /** Durable upstream statistics per day, provider and model (written by runtime.stats). */
  upstreamStats?: UpstreamStats;
  /**
   * Told when a provider that was healthy fails (alerts: providerDegraded). With the registry
   * probe on, only the probe's transitions (once for all instances); otherwise each instance's
   * first failed call after a success.
   */
  onProviderDegraded?: (provider: ProviderId, reason: string) => void;
  /** The clock routes count their minutes and cooldowns by (createRuntime's `clock`); default Date.now. */
  clock?: () => number;
}

/** Outcome counters of one provider since start, for ai.getRegistryHealth. */
export interface ProviderCallStats {
  calls: number;
  failures: number;
  avgLatencyMs: number | null;
  lastSuccessAt: string | null;
  lastFailure: { reason: string; at: string } | null;
}

/** What the shared state says of a provider: its last probe (null when not probed) and its circuit breaker. */
export interface ProviderSharedHealth {
  probe: ProbeResult | null;
  breaker: BreakerState;
}

/** One provider's line of the health report. */
export type ProviderHealth = ProviderSummary & { available: boolean } & ProviderCallStats & ProviderSharedHealth;

export type RegistryHealth =
  | {
      status: 'healthy' | 'degraded';
      checkedAt: string;
      source: RegistrySource;
      summary: { providers: number; models: number; pricedModels: number; serverPaidProviders: number; byokProviders: number };
      /** Whether the registry probe (ai.healthProbe) decides the status. */
      probing: boolean;
      /** Every provider: the four built-ins always, named ones by their ids. */
      providers: Record<BuiltinProviderId, ProviderHealth> & Partial<Record<ProviderId, ProviderHealth>>;
    }
  | { status: 'unhealthy'; checkedAt: string; error: { message: string } };

/**
 * The AI service behind the `ai` namespace: provider and model registry, server-side system
 * prompts, key checks and text generation with metering.
 */
export class AiService {
  readonly providers: ProviderRegistry;
  /** Named system prompts; register more from code with `systemPrompts.register(name, text)`. */
  readonly systemPrompts: SystemPromptStore;
  private readonly stats = new Map<
    ProviderId,
    { calls: number; failures: number; totalMs: number; lastSuccessAt: string | null; lastFailure: { reason: string; at: string } | null }
  >();

  constructor(private readonly opts: AiServiceOptions) {
    this.providers = new ProviderRegistry(opts.config, opts.metrics, opts.upstreamStats);
    this.systemPrompts = new SystemPromptStore(
      opts.config.ai.systemPrompts,
      opts.config.ai.allowInlineSystemPrompts ? 'allowed' : 'refused',
    );
    this.breaker = opts.storage
      ? new CircuitBreaker(opts.storage, { ...opts.config.ai.circuitBreaker, trialMs: opts.config.ai.timeoutMs }, opts.logger)
      : undefined;
    const probeStorage = opts.shared ?? opts.storage;
    this.routing =
      Object.keys(opts.config.ai.routes).length > 0
        ? new Routing(opts.config, probeStorage, opts.logger, opts.metrics, opts.clock)
        : undefined;
    this.cache =
      opts.config.ai.cache.enabled && probeStorage
        ? new ResponseCache(opts.config.ai.cache, probeStorage, opts.logger, opts.metrics)
        : undefined;
    this.probe = probeStorage
      ? new RegistryProbe(opts.config.ai.healthProbe, {
          storage: probeStorage,
          providers: this.providers,
          logger: opts.logger,
          ...(this.breaker ? { breaker: this.breaker } : {}),
          onDegraded: (p, r) => opts.onProviderDegraded?.(p, r),
        })
      : undefined;
    // The AI SDK prints provider warnings with console.* unless told otherwise; we log them
    // per call at debug level instead. Left alone when the embedding app set it.
    const g = globalThis as { AI_SDK_LOG_WARNINGS?: unknown };
    g.AI_SDK_LOG_WARNINGS ??= false;
    const missing = this.providers.serverProvidersWithoutKey();
    if (missing.length > 0) opts.logger.warn('ai: serverProviders without a configured key are not server-paid', { providers: missing });
  }

  private readonly breaker: CircuitBreaker | undefined;
  /** Routes at call time (ai.routes); undefined without routes. */
  private readonly routing: Routing | undefined;
  /** The response cache (ai.cache); undefined when it is off. */
  private readonly cache: ResponseCache | undefined;
  /** Active registry health (ai.healthProbe); undefined without storage. */
  readonly probe: RegistryProbe | undefined;

  /** Start the registry probe (when configured). */
  start(): void {
    this.probe?.start();
  }

  async stop(): Promise<void> {
    await this.probe?.stop();
  }

  private deps(): CallDeps {
    return {
      config: this.opts.config,
      logger: this.opts.logger,
      providers: this.providers,
      prompts: this.systemPrompts,
      metering: this.opts.metering,
      record: (p, ok, ms, reason) => this.record(p, ok, ms, reason),
      ...(this.breaker ? { breaker: this.breaker } : {}),
      ...(this.opts.metrics ? { metrics: this.opts.metrics } : {}),
      ...(this.opts.storedKey ? { storedKey: this.opts.storedKey } : {}),
      ...(this.routing ? { routing: this.routing } : {}),
      ...(this.cache ? { cache: this.cache } : {}),
    };
  }

  /** The response cache's figures on this instance (console); null when it is off. */
  cacheFigures(): ReturnType<ResponseCache['figures']> | null {
    return this.cache ? this.cache.figures() : null;
  }

  /** Empty the response cache (admin.clearCache 'responses'): entries removed, 0 when it is off. */
  async clearResponses(): Promise<number> {
    return this.cache ? this.cache.clear() : 0;
  }

  /** Each route with its targets' share of calls, latency, errors, cooldown and rpm/tpm headroom (the console's Routes). */
  async routes(): Promise<RouteReport[]> {
    return this.routing ? this.routing.report() : [];
  }

  /**
   * The most a platform-paid call of `estimatedTokens` (input plus output, split unknown) can
   * cost, for the budget previews: the dearest split over the model and the configured fallbacks,
   * as the reservation counts. The cost is linear in the split but for a long-context tier, so the
   * dearest split is all input, all output, or just past a tier's threshold (the rest output, at the
   * tier's prices). Null: the model has no price.
   */
  previewCostUsd(provider: ProviderId | undefined, model: string | undefined, estimatedTokens: number): number | null {
    const p = this.providers.assertKnown(provider ?? this.opts.config.ai.defaultProvider);
    const m = model ?? this.providers.defaultModel(p);
    const reachable = reachableModels(this.deps(), { provider: p, model: m }, undefined);
    const splits: Array<[input: number, output: number]> = [
      [estimatedTokens, 0],
      [0, estimatedTokens],
    ];
    for (const t of reachable) {
      const above = this.providers.models.get(t.provider, t.model)?.longContext?.aboveInputTokens;
      if (above !== undefined && estimatedTokens > above) splits.push([above + 1, estimatedTokens - above - 1]);
    }
    const costs = splits.map(([input, output]) => worstCostUsd(this.deps(), reachable, input, output));
    return costs.some((c) => c === undefined) ? null : Math.max(...(costs as number[]));
  }

  async generateText(input: GenerateTextInput, call: GenerateTextCall): Promise<GenerateTextOutput> {
    return (await loadEngine()).runGenerateText(this.deps(), input, call);
  }

  /**
   * The model a call would go to, after every model rule (count_tokens checks a request with it
   * without calling anything). Throws as generateText would.
   */
  checkCallModel(
    input: Pick<GenerateTextInput, 'model' | 'provider' | 'options'>,
    identity: GenerateTextCall['identity'],
  ): { provider: ProviderId; model: string } {
    return resolveCallModel(this.deps(), input, identity);
  }

  /** Embeddings, metered by input tokens (see runEmbed). */
  async embed(input: EmbedInput, call: GenerateTextCall): Promise<EmbedOutput> {
    return (await loadEngine()).runEmbed(this.deps(), input, call);
  }

  /** Checks, payer and reservation now; the returned stream calls the upstream when first read. */
  async streamText(input: GenerateTextInput, call: GenerateTextCall): Promise<AsyncGenerator<StreamEvent, void, undefined>> {
    return (await loadEngine()).runStreamText(this.deps(), input, call);
  }

  listProviders(): { providers: ProviderSummary[]; defaultProvider: ProviderId; source: RegistrySource } {
    return {
      providers: this.providers.ids().map((id) => this.providers.summary(id)),
      defaultProvider: this.opts.config.ai.defaultProvider,
      source: this.providers.models.source(),
    };
  }

  listProvidersBYOK(): { providers: Array<{ id: ProviderId; name: string }> } {
    const ids = this.providers.ids().filter((id) => this.providers.isByokProvider(id));
    return { providers: ids.map((id) => ({ id, name: this.providers.models.providerName(id) })) };
  }

  listAllowedModels(provider?: ProviderId): { models: Record<ProviderId, string[]> } | { provider: ProviderId; models: string[] } {
    if (provider) return { provider, models: this.providers.allowedModels(this.providers.assertKnown(provider)) };
    const models = Object.fromEntries(this.providers.ids().map((id) => [id, this.providers.allowedModels(id)])) as Record<
      ProviderId,
      string[]
    >;
    return { models };
  }

  validateProvider(provider: ProviderId, apiKey: string, signal?: AbortSignal): Promise<KeyValidation> {
    return validateProviderKey({
      provider,
      apiKey,
      baseUrl: this.providers.baseUrl(provider),
      timeoutMs: this.opts.config.ai.validateTimeoutMs,
      ...(signal ? { signal } : {}),
    });
  }

  /**
   * Registry availability, call metrics (this instance's), and the shared state of each provider:
   * its last probe and its circuit breaker. With the probe on, a usable provider whose last probe
   * failed, or whose breaker is open, makes the status `degraded`, the same on every instance;
   * without it, one whose most recent call on this instance failed. Never throws: a failed check
   * reports its error.
   */
  async registryHealth(): Promise<RegistryHealth> {
    const checkedAt = new Date().toISOString();
    try {
      const probing = this.probe?.enabled ?? false;
      const ids = this.providers.ids();
      const [probes, breakers] = await Promise.all([
        // A storage failure leaves the shared view unknown; it does not fail the report.
        probing
          ? this.probe!.results().catch(() => ({}) as Partial<Record<ProviderId, ProbeResult>>)
          : ({} as Partial<Record<ProviderId, ProbeResult>>),
        Promise.all(ids.map((id) => this.breaker?.state(id) ?? ('closed' as const))),
      ]);
      // Filled below for every id, the four built-ins included.
      const providers = {} as Record<BuiltinProviderId, ProviderHealth> & Record<ProviderId, ProviderHealth>;
      for (const [i, id] of ids.entries()) {
        const summary = this.providers.summary(id);
        providers[id] = {
          ...summary,
          available: (summary.serverPaid || summary.byok) && summary.models > 0,
          ...this.callStats(id),
          probe: probes[id] ?? null,
          breaker: breakers[i]!,
        };
      }
      const list = Object.values(providers);
      const available = list.filter((p) => p.available);
      if (available.length === 0)
        return {
          status: 'unhealthy',
          checkedAt,
          error: { message: 'no provider is usable: none is server-paid or open to own keys with an allowed model' },
        };
      const failing = probing
        ? available.some((p) => (p.probe && !p.probe.ok) || p.breaker === 'open')
        : available.some((p) => p.lastFailure && (!p.lastSuccessAt || p.lastFailure.at > p.lastSuccessAt));
      return {
        status: failing ? 'degraded' : 'healthy',
        checkedAt,
        source: this.providers.models.source(),
        summary: {
          ...this.providers.models.summary(),
          serverPaidProviders: list.filter((p) => p.serverPaid).length,
          byokProviders: list.filter((p) => p.byok).length,
        },
        probing,
        providers,
      };
    } catch (err) {
      return { status: 'unhealthy', checkedAt, error: { message: err instanceof Error ? err.message : 'registry check failed' } };
    }
  }

  /** Readiness probe: fails only when no provider is usable (a failing upstream only degrades). */
  async healthProbe(): Promise<{ ok: boolean; detail?: string }> {
    const h = await this.registryHealth();
    return h.status === 'unhealthy' ? { ok: false, detail: h.error.message } : { ok: true, detail: h.status };
  }

  private callStats(provider: ProviderId): ProviderCallStats {
    const s = this.stats.get(provider);
    if (!s) return { calls: 0, failures: 0, avgLatencyMs: null, lastSuccessAt: null, lastFailure: null };
    return {
      calls: s.calls,
      failures: s.failures,
      avgLatencyMs: s.calls ? Math.round(s.totalMs / s.calls) : null,
      lastSuccessAt: s.lastSuccessAt,
      lastFailure: s.lastFailure,
    };
  }

  private record(provider: ProviderId, ok: boolean, ms: number, reason?: string): void {
    let s = this.stats.get(provider);
    if (!s) this.stats.set(provider, (s = { calls: 0, failures: 0, totalMs: 0, lastSuccessAt: null, lastFailure: null }));
    s.calls++;
    s.totalMs += ms;
    const at = new Date().toISOString();
    if (ok) s.lastSuccessAt = at;
    else {
      s.failures++;
      // A client leaving says nothing about the provider's health.
      if (reason !== 'cancelled') {
        const wasHealthy = !s.lastFailure || (s.lastSuccessAt !== null && s.lastSuccessAt >= s.lastFailure.at);
        s.lastFailure = { reason: reason ?? 'unknown', at };
        // With the probe on, the probe alone alerts (once for the cluster, not once per instance).
        if (wasHealthy && !this.probe?.enabled) this.opts.onProviderDegraded?.(provider, s.lastFailure.reason);
      }
    }
  }
}
