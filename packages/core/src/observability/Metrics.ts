import type { Counter, Histogram, Registry } from 'prom-client';
import { lazyRequire } from '../lib/lazyRequire.js';

type PromClient = typeof import('prom-client');
const promClient = lazyRequire<PromClient & { default?: PromClient }>('prom-client');

/** Seconds buckets for our own request handling (sub-millisecond to half a minute). */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds buckets for upstream model calls (they take seconds, sometimes minutes). */
const UPSTREAM_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];
/** Seconds buckets for storage operations. */
const STORAGE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** Calls kept before prom-client is loaded, at most (see Metrics.later). */
const MAX_PENDING = 1000;

/** At most this many distinct values per bounded label; the rest are reported as 'other'. */
const MAX_LABEL_VALUES = 100;

/**
 * Keeps a label's cardinality bounded: the first MAX_LABEL_VALUES distinct values are kept,
 * anything after that becomes 'other'. For labels fed by input (model names), so a caller
 * cannot grow the series set without limit.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max = MAX_LABEL_VALUES) {}
  value(v: string): string {
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(v);
    return v;
  }
}

export type Payer = 'platform' | 'byok';

/** One provider's upstream figures on this instance (see Metrics.consoleFigures). */
export interface ProviderFigures {
  provider: string;
  calls: number;
  failures: number;
  /** Latency to the response headers, bucket upper bound in ms; null without calls (or above the last bucket). */
  p50Ms: number | null;
  p99Ms: number | null;
  tokens: Record<Payer, number>;
  costUsd: Record<Payer, number>;
}

export interface ConsoleFigures {
  providers: ProviderFigures[];
  mcp: { sessions: number; streams: number };
}

/**
 * The server's Prometheus metrics, on a registry of its own (several servers in one process do
 * not mix). No label carries a user id, token, key or free text: entry point, procedure path
 * (only paths the router has), outcome code, provider, model (bounded), storage operation.
 * See docs/operations.md for every name.
 */
export class Metrics {
  private registry!: Registry;
  private requests!: Counter<'entry' | 'procedure' | 'outcome'>;
  private requestSeconds!: Histogram<'entry' | 'procedure'>;
  private httpRequests!: Counter<'entry' | 'status'>;
  private upstreamRequests!: Counter<'provider' | 'model' | 'outcome'>;
  private upstreamSeconds!: Histogram<'provider' | 'model'>;
  private upstreamFallbacks!: Counter<'provider' | 'model'>;
  private routeAttempts!: Counter<'route' | 'target' | 'outcome'>;
  private cacheLookups!: Counter<'outcome'>;
  private tokens!: Counter<'provider' | 'model' | 'payer'>;
  private costUsd!: Counter<'provider' | 'model' | 'payer'>;
  private storageSeconds!: Histogram<'backend' | 'operation'>;
  private storageErrors!: Counter<'backend' | 'operation'>;
  private rateLimited!: Counter<'kind'>;
  private alerts!: Counter<'event' | 'outcome'>;
  private keyAuth!: Counter<'outcome'>;
  private keyRefused!: Counter<'limit'>;
  private keyTokens!: Counter<'payer'>;
  private holdSweepFailures!: Counter;
  private readonly models = new BoundedLabel();
  /** Children by label key: prom-client hashes the label object on every call otherwise. */
  private readonly requestChildren = new Map<string, { count: { inc(): void }; seconds: { observe(v: number): void } }>();
  private readonly httpChildren = new Map<string, { inc(): void }>();
  /**
   * The same for the per-call counters and histograms below (upstream, metered, storage): several per AI call. Keys are bounded like the
   * labels.
   */
  private readonly incChildren = new Map<string, { inc(v?: number): void }>();
  private readonly observeChildren = new Map<string, { observe(v: number): void }>();
  private sessionsSource: () => number = () => 0;
  private streamsSource: () => number = () => 0;

  /** Calls recorded before prom-client was loaded, replayed once it is (see `later`). */
  private pending: Array<() => void> | undefined;
  private ready = false;
  private scheduled = false;

  constructor(private readonly opts: { processMetrics: boolean }) {}

  /**
   * prom-client (and its process metrics) load right after the first request other than a health
   * check, or on the first read of the metrics (see `later`), not at start. CommonJS, so it loads
   * synchronously. Idempotent.
   */
  private load(): void {
    if (this.ready) return;
    this.ready = true;
    const loaded = promClient();
    this.build(loaded.default ?? loaded, this.opts);
    const pending = this.pending ?? [];
    this.pending = undefined;
    for (const call of pending) call();
  }

  /**
   * A call before prom-client is loaded: kept, and prom-client loaded right after the current
   * request (setImmediate), so the request that first records a metric does not wait for it.
   * Calls that only wait in the queue (`'queued'`: health checks and storage operations) do not
   * load it: a server that has answered nothing but health checks has not loaded prom-client, the
   * first CommonJS module it would load, which made a first `/health` cost 2 MB
   * (docs/performance.md, "Tenth session"). Past MAX_PENDING kept calls it loads anyway. Nothing
   * is lost: `/metrics` and the console load it (and replay) before reading.
   */
  private later(call: () => void, load: 'now' | 'queued' = 'now'): void {
    (this.pending ??= []).push(call);
    if (this.scheduled || (load === 'queued' && this.pending.length < MAX_PENDING)) return;
    this.scheduled = true;
    setImmediate(() => this.load());
  }

  private build(prom: PromClient, opts: { processMetrics: boolean }): void {
    const registry = (this.registry = new prom.Registry());
    const registers = [registry];
    this.requests = new prom.Counter({
      name: 'ai_backend_requests_total',
      help: 'Procedure calls by entry point (trpc, rpc, mcp, openai, anthropic, internal), procedure path and outcome (ok or the tRPC error code)',
      labelNames: ['entry', 'procedure', 'outcome'],
      registers,
    });
    this.requestSeconds = new prom.Histogram({
      name: 'ai_backend_request_duration_seconds',
      help: 'Procedure call latency, including middleware (auth, rate limit, validation)',
      labelNames: ['entry', 'procedure'],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.httpRequests = new prom.Counter({
      name: 'ai_backend_http_requests_total',
      help: 'HTTP requests by entry point (trpc, rpc, mcp, openai, anthropic, oauth, api_description, health, metrics, webhook, other) and status class',
      labelNames: ['entry', 'status'],
      registers,
    });
    this.upstreamRequests = new prom.Counter({
      name: 'ai_backend_upstream_requests_total',
      help: 'HTTP calls to model providers by provider, model and outcome (2xx, 4xx, 429, 5xx, network, aborted)',
      labelNames: ['provider', 'model', 'outcome'],
      registers,
    });
    this.upstreamSeconds = new prom.Histogram({
      name: 'ai_backend_upstream_duration_seconds',
      help: 'Time to the response headers of a provider call',
      labelNames: ['provider', 'model'],
      buckets: UPSTREAM_BUCKETS,
      registers,
    });
    this.upstreamFallbacks = new prom.Counter({
      name: 'ai_backend_upstream_fallbacks_total',
      help: 'Calls that left a provider/model for a fallback, by the provider and model left',
      labelNames: ['provider', 'model'],
      registers,
    });
    // Route and target labels come from the config (ai.routes), never from a request.
    this.routeAttempts = new prom.Counter({
      name: 'ai_backend_route_attempts_total',
      help: 'Attempts on the targets of configured routes, by route, target (provider/model as configured) and outcome (ok, rate_limited, upstream_5xx, timeout, ...)',
      labelNames: ['route', 'target', 'outcome'],
      registers,
    });
    this.cacheLookups = new prom.Counter({
      name: 'ai_backend_response_cache_total',
      help: 'Response cache lookups by outcome (hit, miss)',
      labelNames: ['outcome'],
      registers,
    });
    this.tokens = new prom.Counter({
      name: 'ai_backend_tokens_total',
      help: "Tokens metered by provider, model and payer (platform: the server paid; byok: the caller's own key)",
      labelNames: ['provider', 'model', 'payer'],
      registers,
    });
    this.costUsd = new prom.Counter({
      name: 'ai_backend_cost_usd_total',
      help: 'Money cost of metered calls in USD from the pricing table, by provider, model and payer',
      labelNames: ['provider', 'model', 'payer'],
      registers,
    });
    this.storageSeconds = new prom.Histogram({
      name: 'ai_backend_storage_operation_duration_seconds',
      help: 'Storage operation latency by backend and operation',
      labelNames: ['backend', 'operation'],
      buckets: STORAGE_BUCKETS,
      registers,
    });
    this.storageErrors = new prom.Counter({
      name: 'ai_backend_storage_errors_total',
      help: 'Storage operations that failed, by backend and operation',
      labelNames: ['backend', 'operation'],
      registers,
    });
    this.rateLimited = new prom.Counter({
      name: 'ai_backend_rate_limited_total',
      help: 'Requests refused by the rate limiter, by kind (requests, toolCalls)',
      labelNames: ['kind'],
      registers,
    });
    this.alerts = new prom.Counter({
      name: 'ai_backend_alerts_total',
      help: 'Alert webhook deliveries by event and outcome (delivered, retry, dead)',
      labelNames: ['event', 'outcome'],
      registers,
    });
    // API keys: outcomes and limits only, never a key id or name as a label (bounded cardinality).
    this.keyAuth = new prom.Counter({
      name: 'ai_backend_api_key_authentications_total',
      help: 'API keys presented, by outcome (ok, invalid, revoked, expired, address, unavailable)',
      labelNames: ['outcome'],
      registers,
    });
    this.keyRefused = new prom.Counter({
      name: 'ai_backend_api_key_refusals_total',
      help: "Calls refused by an API key's own rules, by limit (requests, tokens, concurrent, budget, model)",
      labelNames: ['limit'],
      registers,
    });
    this.keyTokens = new prom.Counter({
      name: 'ai_backend_api_key_tokens_total',
      help: 'Tokens used by calls made with API keys, by payer',
      labelNames: ['payer'],
      registers,
    });
    this.holdSweepFailures = new prom.Counter({
      name: 'ai_backend_hold_sweep_failures_total',
      help: "Expired holds billing's sweep could not release (a corrupt record, a failed transaction); each round counts each again",
      registers,
    });
    const self = this;
    // The two gauges live in the registry and are read through their collect(): no field holds them.
    new prom.Gauge({
      name: 'ai_backend_mcp_sessions',
      help: 'Open MCP sessions on this instance',
      registers,
      collect() {
        this.set(self.sessionsSource());
      },
    });
    new prom.Gauge({
      name: 'ai_backend_mcp_streams',
      help: 'Open MCP server-sent-event streams on this instance',
      registers,
      collect() {
        this.set(self.streamsSource());
      },
    });
    if (opts.processMetrics) prom.collectDefaultMetrics({ register: registry, prefix: 'ai_backend_' });
  }

  /** A procedure call finished (ok, or refused/failed with a tRPC error code). */
  procedure(entry: string, procedure: string, seconds: number, outcome: string): void {
    if (!this.ready) return this.later(() => this.procedure(entry, procedure, seconds, outcome));
    const key = `${entry} ${procedure} ${outcome}`;
    let child = this.requestChildren.get(key);
    if (!child) {
      child = { count: this.requests.labels(entry, procedure, outcome), seconds: this.requestSeconds.labels(entry, procedure) };
      this.requestChildren.set(key, child);
    }
    child.count.inc();
    child.seconds.observe(seconds);
  }

  http(entry: string, status: number): void {
    // A health check alone does not load prom-client (see `later`); any other request does.
    if (!this.ready) return this.later(() => this.http(entry, status), entry === 'health' ? 'queued' : 'now');
    const key = entry + Math.floor(status / 100);
    let child = this.httpChildren.get(key);
    if (!child) this.httpChildren.set(key, (child = this.httpRequests.labels(entry, `${Math.floor(status / 100)}xx`)));
    child.inc();
  }

  upstream(provider: string, model: string, outcome: string, seconds: number | undefined): void {
    if (!this.ready) return this.later(() => this.upstream(provider, model, outcome, seconds));
    const m = this.models.value(model);
    this.inc(this.upstreamRequests, `up ${provider} ${m} ${outcome}`, [provider, m, outcome]).inc();
    if (seconds !== undefined) this.observe(this.upstreamSeconds, `up ${provider} ${m}`, [provider, m]).observe(seconds);
  }

  fallback(provider: string, model: string): void {
    if (!this.ready) return this.later(() => this.fallback(provider, model));
    this.upstreamFallbacks.labels(provider, this.models.value(model)).inc();
  }

  /** An attempt on a route target ended (labels from the config only: bounded). */
  routeAttempt(route: string, target: string, outcome: string): void {
    if (!this.ready) return this.later(() => this.routeAttempt(route, target, outcome));
    this.inc(this.routeAttempts, `rt ${route} ${target} ${outcome}`, [route, target, outcome]).inc();
  }

  cacheLookup(outcome: 'hit' | 'miss'): void {
    if (!this.ready) return this.later(() => this.cacheLookup(outcome));
    this.inc(this.cacheLookups, `cache ${outcome}`, [outcome]).inc();
  }

  metered(provider: string, model: string, payer: Payer, tokens: number, costUsd: number | undefined): void {
    if (!this.ready) return this.later(() => this.metered(provider, model, payer, tokens, costUsd));
    const m = this.models.value(model);
    if (tokens > 0) this.inc(this.tokens, `tok ${provider} ${m} ${payer}`, [provider, m, payer]).inc(tokens);
    if (costUsd !== undefined && costUsd > 0) this.inc(this.costUsd, `usd ${provider} ${m} ${payer}`, [provider, m, payer]).inc(costUsd);
  }

  storage(backend: string, operation: string, seconds: number, failed: boolean): void {
    if (!this.ready) return this.later(() => this.storage(backend, operation, seconds, failed), 'queued');
    this.observe(this.storageSeconds, `st ${backend} ${operation}`, [backend, operation]).observe(seconds);
    if (failed) this.storageErrors.labels(backend, operation).inc();
  }

  /** The labelled child of a counter, cached under `key` (which must identify metric and label values). */
  private inc(
    metric: { labels(...values: string[]): { inc(v?: number): void } },
    key: string,
    values: string[],
  ): { inc(v?: number): void } {
    let child = this.incChildren.get(key);
    if (!child) this.incChildren.set(key, (child = metric.labels(...values)));
    return child;
  }

  /** The labelled child of a histogram, cached under `key` (which must identify metric and label values). */
  private observe(
    metric: { labels(...values: string[]): { observe(v: number): void } },
    key: string,
    values: string[],
  ): { observe(v: number): void } {
    let child = this.observeChildren.get(key);
    if (!child) this.observeChildren.set(key, (child = metric.labels(...values)));
    return child;
  }

  rateLimitRefused(kind: string): void {
    if (!this.ready) return this.later(() => this.rateLimitRefused(kind));
    this.rateLimited.labels(kind).inc();
  }

  apiKeyAuth(outcome: 'ok' | 'invalid' | 'revoked' | 'expired' | 'address' | 'unavailable'): void {
    if (!this.ready) return this.later(() => this.apiKeyAuth(outcome));
    this.keyAuth.labels(outcome).inc();
  }

  apiKeyRefused(limit: 'requests' | 'tokens' | 'concurrent' | 'budget' | 'model'): void {
    if (!this.ready) return this.later(() => this.apiKeyRefused(limit));
    this.keyRefused.labels(limit).inc();
  }

  apiKeyTokens(payer: Payer, tokens: number): void {
    if (!this.ready) return this.later(() => this.apiKeyTokens(payer, tokens));
    if (tokens > 0) this.keyTokens.labels(payer).inc(tokens);
  }

  holdSweepFailed(): void {
    if (!this.ready) return this.later(() => this.holdSweepFailed(), 'queued');
    this.holdSweepFailures.inc();
  }

  alert(event: string, outcome: 'delivered' | 'retry' | 'dead' | 'dropped'): void {
    if (!this.ready) return this.later(() => this.alert(event, outcome));
    this.alerts.labels(event, outcome).inc();
  }

  /** The MCP layer reports its open sessions and streams through these (read at scrape time). */
  setMcpSources(sessions: () => number, streams: () => number): void {
    this.sessionsSource = sessions;
    this.streamsSource = streams;
  }

  /**
   * This instance's upstream figures per provider for the console: calls, failed calls, latency
   * p50/p99 (upper bound of the histogram bucket holding it, in ms), tokens and money by payer;
   * and the open MCP sessions and streams. Read from the registry, nothing stored.
   */
  async consoleFigures(): Promise<ConsoleFigures> {
    this.load();
    const json = (await this.registry.getMetricsAsJSON()) as Array<{
      name: string;
      values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>;
    }>;
    const metric = (name: string) => json.find((m) => m.name === name)?.values ?? [];
    const providers = new Map<string, ProviderFigures & { buckets: Map<number, number> }>();
    const of = (p: string) => {
      let f = providers.get(p);
      if (!f)
        providers.set(
          p,
          (f = {
            provider: p,
            calls: 0,
            failures: 0,
            p50Ms: null,
            p99Ms: null,
            tokens: { platform: 0, byok: 0 },
            costUsd: { platform: 0, byok: 0 },
            buckets: new Map(),
          }),
        );
      return f;
    };
    for (const v of metric('ai_backend_upstream_requests_total')) {
      const f = of(String(v.labels.provider));
      f.calls += v.value;
      if (!String(v.labels.outcome).startsWith('2')) f.failures += v.value;
    }
    for (const v of metric('ai_backend_upstream_duration_seconds')) {
      if (v.metricName !== 'ai_backend_upstream_duration_seconds_bucket') continue;
      const f = of(String(v.labels.provider));
      const le = v.labels.le === '+Inf' ? Infinity : Number(v.labels.le);
      f.buckets.set(le, (f.buckets.get(le) ?? 0) + v.value);
    }
    for (const [name, key] of [
      ['ai_backend_tokens_total', 'tokens'],
      ['ai_backend_cost_usd_total', 'costUsd'],
    ] as const) {
      for (const v of metric(name)) {
        const payer = v.labels.payer === 'byok' ? 'byok' : 'platform';
        of(String(v.labels.provider))[key][payer] += v.value;
      }
    }
    const out: ProviderFigures[] = [];
    for (const { buckets, ...f } of providers.values()) {
      // Cumulative bucket counts: the percentile is the first bound whose count reaches its rank.
      const bounds = [...buckets].sort((a, b) => a[0] - b[0]);
      const count = bounds.at(-1)?.[1] ?? 0;
      const at = (p: number) => {
        if (!count) return null;
        const hit = bounds.find(([, c]) => c >= Math.ceil(p * count));
        return hit && Number.isFinite(hit[0]) ? Math.round(hit[0] * 1000) : null;
      };
      out.push({ ...f, p50Ms: at(0.5), p99Ms: at(0.99) });
    }
    return {
      providers: out.sort((a, b) => a.provider.localeCompare(b.provider)),
      mcp: { sessions: this.sessionsSource(), streams: this.streamsSource() },
    };
  }

  /** The Prometheus text exposition and its content type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    this.load();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** The metrics (only when metrics are on); prom-client itself loads on first use (`Metrics.load`). */
export async function createMetrics(opts: { processMetrics: boolean }): Promise<Metrics> {
  return new Metrics(opts);
}
