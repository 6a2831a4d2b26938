import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from './config/schema.js';
import { CoreError } from './kernel/CoreError.js';
import { createAppRouter } from './routers/appRouter.js';
import { loadRouter } from './pipeline/invoke.js';
import { createResourceRegistry } from './routers/adapters/createResourceRegistry.js';
import { createPromptRegistry } from './routers/adapters/createPromptRegistry.js';
import { BillingService } from './services/billing/BillingService.js';
import { KeyVault } from './services/vault/KeyVault.js';
import { UpstreamCredentials } from './services/gateway/credentials/UpstreamCredentials.js';
import { perUserServersFrom } from './services/gateway/credentials/perUserServers.js';
import type { McpServerConfig } from './config/sections/mcpServers.js';
import { AiService } from './services/ai/AiService.js';
import { RateLimiter, storeOutageFor } from './services/rateLimit/RateLimiter.js';
import { SecurityLog } from './services/security/SecurityLog.js';
import { jwtAudienceWarning, unusableAuthWarning } from './config/authWarnings.js';
import { ClientWorkspaceService } from './services/workspaces/ClientWorkspaceService.js';
import { WorkspaceService } from './services/workspaces/WorkspaceService.js';
import { createStorage } from './storage/createStorage.js';
import { privateDataWarnings } from './storage/privateDataWarnings.js';
import { ConfigError } from './config/ConfigError.js';
import { missingPackages } from './config/optionalPackages.js';
import type { Storage } from './kernel/Storage.js';
import { createLogger, type Logger } from './kernel/Logger.js';
import type { Authenticator } from './kernel/identity.js';
import type { HealthProbe, Runtime } from './runtime/Runtime.js';
import { Stats } from './runtime/Stats.js';
import { UpstreamStats } from './observability/UpstreamStats.js';
import { CLEAR_CACHES, createSignals } from './runtime/createSignals.js';
import type { Signals } from './kernel/Signals.js';
import { UserDirectory } from './services/directory/UserDirectory.js';
import { Retention } from './services/retention/Retention.js';
import { join } from 'node:path';
import { AlertOutbox } from './services/governance/AlertOutbox.js';
import { createMetrics } from './observability/Metrics.js';
import { instrumentStorage } from './observability/instrumentStorage.js';
import { ApiKeyService } from './services/apiKeys/ApiKeyService.js';
import { bearerAuthenticator } from './services/apiKeys/apiKeyFormat.js';
import { KeyLimits } from './services/apiKeys/KeyLimits.js';
import { RecentCalls } from './observability/RecentCalls.js';
import { McpGateway } from './services/gateway/McpGateway.js';

export interface CreateRuntimeOptions {
  /** Use this storage instead of opening the configured one (tests, embedding). */
  storage?: Storage;
  /** Use this storage for the hot shared state instead of the configured one. */
  shared?: Storage;
  /** Use these cross-instance signals instead of the configured ones. */
  signals?: Signals;
  logger?: Logger;
  /** The app router, when the caller built it already (createServer does, to type its clients). */
  router?: AnyRouter;
  /**
   * Leave the router's lazy built-in namespaces unbuilt until an entry point first needs them
   * (createServer does: its API routes await loadRouter). Default false: the runtime's router is
   * loaded when this resolves, so code holding it can read its procedures synchronously.
   */
  lazyRouter?: boolean;
  /**
   * The bearer-token verifier (createServer passes the auth package's). A factory, because the
   * verifier of our own OAuth server needs the store and services this function builds; it is
   * called once, before the runtime is handed out. Without it, bearer tokens other than API keys
   * are refused.
   */
  authenticator?: (runtime: Runtime) => Authenticator | Promise<Authenticator>;
  /**
   * The clock the rate limits' fixed windows are read from (`mcp.rateLimiting`, API keys' per-minute
   * limits, routes' rpm/tpm minutes and cooldowns). Default Date.now. Tests pass one that starts at a window's beginning, so their calls
   * share one window without waiting for the wall clock's next minute.
   */
  clock?: () => number;
}

const noAuthenticator: Authenticator = async () => ({
  ok: false,
  error: new CoreError('INVALID_TOKEN', 'bearer tokens are not accepted: no token verifier is configured'),
});

/** Open storage and build the services for one server. */
export async function createRuntime(config: ResolvedConfig, opts: CreateRuntimeOptions = {}): Promise<Runtime> {
  // Optional packages (drivers, provider packages) the config needs: all named now, before
  // anything is opened, rather than one at a time at the first call that loads it.
  const missing = missingPackages(config, { storage: !opts.storage, shared: !opts.shared, signals: !opts.signals });
  if (missing.length) throw new ConfigError(missing);
  const logger = opts.logger ?? createLogger(config.monitoring.logging.level);
  let alertOnDegraded: ((provider: string, reason: string) => void) | undefined;
  const metrics = config.metrics.enabled ? await createMetrics({ processMetrics: config.metrics.processMetrics }) : undefined;
  // Every service sees the instrumented store: spans and latency per storage operation.
  const store = opts.storage ?? (await createStorage(config.storage));
  const storage = instrumentStorage(store, metrics);
  // A store that stops serving for good (its data lost under the server, a newer release): one
  // error line saying why; every call answers 503 with the same message from then on.
  store.onFault?.((err) => logger.error('storage: refusing every call', { error: err.message }));
  if (!opts.storage) {
    // The backend's own settings (PostgreSQL's autovacuum): a warning at start, never a refusal.
    const maintenance = await store.maintenanceWarnings?.().catch(() => []);
    for (const w of maintenance ?? []) logger.warn(w.message, { fix: w.fix });
    for (const w of privateDataWarnings(config.storage)) {
      logger.warn(
        `the ${w.kind === 'directory' ? 'data directory' : 'data file'} ${w.path} is open to other users (mode ${w.mode}); it holds the vault, ledger, key hashes and OAuth records`,
        {
          fix: `chmod ${w.kind === 'directory' ? '700' : '600'} ${w.path}`,
        },
      );
    }
  }
  const closers: Array<() => Promise<void> | void> = [() => storage.close()];
  const health = new Map<string, HealthProbe>([['storage', () => storage.health()]]);
  let shared = opts.shared ?? storage;
  if (!opts.shared && config.storage.shared === 'redis' && config.storage.redis && storage.kind !== 'redis') {
    // Hot, short-lived state only (operations.md, "Redis beside the store"): a Redis without
    // persistence may come back empty, which is not the lost store RedisStorage refuses.
    shared = await createStorage(
      { type: 'redis', dir: config.storage.dir, shared: 'store', redis: config.storage.redis },
      { holds: 'shared' },
    );
    closers.push(() => shared.close());
    health.set('shared', () => shared.health());
  }
  const signals = opts.signals ?? (await createSignals(config, logger));
  closers.push(() => signals.close());
  const caches = new Map<string, () => void | Promise<void>>();
  // Another instance's admin.clearCache empties this one's in-process caches too.
  signals.subscribe(CLEAR_CACHES, (target) => {
    for (const [name, clear] of caches)
      if (target === 'all' || target === 'memory' || target === name) void Promise.resolve(clear()).catch(() => undefined);
  });
  const router: AnyRouter = opts.router ?? createAppRouter(config.customRouters);
  if (!opts.lazyRouter) await loadRouter(router);
  const vaultKey = config.billing.vaultKey ?? config.oauth.encryptionKey;
  const vault = new KeyVault(storage, { masterKey: vaultKey, previousKeys: config.billing.previousVaultKeys }, logger);
  const alerts = new AlertOutbox(storage, config, logger, metrics);
  // Budget alerts are written by billing inside the transaction that causes them (exactly once).
  const clock = opts.clock ?? Date.now;
  const keyLimits = new KeyLimits(shared, logger, (kind) => metrics?.apiKeyRefused(kind), clock);
  const billing = new BillingService(storage, vault, config.billing, logger, shared, alerts, keyLimits, () => metrics?.holdSweepFailed());
  // Sweep at least twice per hold lifetime, so a hold a dead instance left is released within 1.5x its TTL.
  billing.start(Math.min(60_000, Math.max(500, Math.floor(config.billing.reservationTtlMs / 2))));
  closers.push(() => billing.stop());
  const r = config.storage.retention;
  const retention = new Retention(
    storage,
    {
      days: { ledger: r.ledgerDays, usage: r.usageDays, purchases: r.purchasesDays },
      exportDir: r.exportDir ?? join(config.storage.dir, 'archive'),
      format: r.format,
      batchSize: r.batchSize,
    },
    logger,
  );
  retention.start(r.everyMinutes * 60_000);
  closers.push(() => retention.stop());
  if (alerts.enabled) {
    // Billing's operator events become signed webhooks; enqueue failures are logged, never thrown into billing.
    const send = (event: 'tokenLow' | 'fallbackToByok' | 'oneTimeConsumed' | 'providerDegraded', data: Record<string, unknown>) =>
      void alerts
        .enqueue(event, data)
        .catch((err) =>
          logger.warn('alerts: could not record an event', { event, error: err instanceof Error ? err.message : String(err) }),
        );
    billing.events.on('tokenLow', (e) => send('tokenLow', e));
    billing.events.on('fallbackToByok', (e) => send('fallbackToByok', e));
    billing.events.on('oneTimeConsumed', (e) => send('oneTimeConsumed', e));
    alertOnDegraded = (provider, reason) => send('providerDegraded', { provider, reason });
  }
  alerts.start();
  closers.push(() => alerts.stop());
  // Calls to providers per day, provider and model, written with the request statistics (off with them).
  const upstreamStats = config.statistics.enabled ? new UpstreamStats() : undefined;
  const ai = new AiService({
    config,
    logger,
    ...(upstreamStats ? { upstreamStats } : {}),
    metering: billing,
    metrics,
    onProviderDegraded: (p, r) => alertOnDegraded?.(p, r),
    storage,
    shared,
    clock,
    // A BYOK call's fallback to another provider spends the caller's stored key for it only
    // where the caller allowed stored keys to be spent (the same rule as billing's own BYOK choice).
    storedKey: async (userId, provider) => {
      const prefs = await billing.preferences.get(userId);
      if (!prefs.byokEnabled || prefs.byokProviders[provider]?.enabled === false) return undefined;
      return vault.reveal(userId, provider);
    },
  });
  ai.start();
  closers.push(() => ai.stop());
  health.set('ai', () => ai.healthProbe());
  const workspaces = new WorkspaceService(config.serverWorkspaces, storage, logger);
  await workspaces
    .start()
    .catch((err) => logger.warn('workspace watchers not started', { error: err instanceof Error ? err.message : String(err) }));
  closers.push(() => workspaces.close());
  const security = SecurityLog.fromConfig(config, logger);
  closers.push(() => security.close());
  const authWarning = unusableAuthWarning(config);
  if (authWarning) logger.warn(authWarning, { see: 'docs/auth-jwt.md, docs/oauth.md' });
  const audienceWarning = jwtAudienceWarning(config);
  if (audienceWarning) logger.warn(audienceWarning, { see: 'docs/auth-jwt.md' });
  const stats = config.statistics.enabled
    ? new Stats(storage, {
        flushIntervalMs: config.statistics.flushIntervalMs,
        retentionDays: config.statistics.retentionDays,
        signals,
        ...(upstreamStats ? { upstream: upstreamStats } : {}),
      })
    : new Stats();
  stats.start();
  // admin.clearCache 'usage' / 'all' on any instance: counts pending here predate the clear.
  signals.subscribe(CLEAR_CACHES, (target) => {
    if (target === 'all' || target === 'usage') stats.dropPending();
  });
  closers.push(() => stats.stop());
  let closed: Promise<void> | undefined;
  const users = new UserDirectory(storage, config);
  closers.push(() => users.settled());
  const keys = new ApiKeyService(storage, config, signals, users, logger, {
    limits: keyLimits,
    onAuth: (outcome) => metrics?.apiKeyAuth(outcome),
    // The gateway is created below; asked per request.
    ownerHeldScopes: () => gateway.allowScopes(),
  });

  const upstreamCredentials: UpstreamCredentials = new UpstreamCredentials({
    storage,
    logger,
    // The gateway's servers, configured and added at run time (it is created just below; looked up per call).
    servers: perUserServersFrom((name): McpServerConfig | undefined => gateway.serverConfig(name)),
    ...(vaultKey ? { masterKey: vaultKey } : {}),
    ...(config.billing.previousVaultKeys ? { previousKeys: config.billing.previousVaultKeys } : {}),
  });
  // Upstream MCP servers: shared connections start now (in the background), calls are metered like AI calls,
  // and each call is counted per configured server name in the provider statistics and metrics (`mcp:<server>`).
  const gateway: McpGateway = new McpGateway({
    config,
    logger,
    storage,
    signals,
    // PostgreSQL shared by instances without a Redis: no shared signals, so servers added at run time are polled for.
    ...(config.storage.type === 'postgres' && !config.storage.redis ? { pollMs: config.gateway.syncIntervalMs } : {}),
    metering: billing,
    credentials: upstreamCredentials,
    sealer: upstreamCredentials.store,
    onCall: (server, outcome, seconds) => {
      upstreamStats?.record(`mcp:${server}`, 'tools/call', outcome, seconds);
      metrics?.upstream(`mcp:${server}`, 'tools/call', outcome, seconds);
    },
  });
  gateway.start();
  closers.push(() => gateway.close());

  const runtime: Runtime = {
    config,
    storage,
    shared,
    stats,
    metrics,
    recentCalls: new RecentCalls(),
    caches,
    signals,
    users,
    alerts,
    logger,
    resources: createResourceRegistry(router, workspaces, config),
    workspaces,
    clientWorkspaces: new ClientWorkspaceService(storage, logger),
    prompts: createPromptRegistry(router),
    billing,
    retention,
    vault,
    upstreamCredentials,
    ai,
    rateLimit: new RateLimiter(shared, config.mcp.rateLimiting, {
      logger,
      now: clock,
      // Counted in the PostgreSQL store every call needs: its outage refuses (RateLimiter.storeOutage).
      storeOutage: storeOutageFor(shared, storage),
      onRefusal: (kind) => metrics?.rateLimitRefused(kind),
    }),
    security,
    keys,
    gateway,
    router,
    health,
    // Until opts.authenticator is installed below, bearer tokens other than API keys are refused.
    authenticate: bearerAuthenticator(keys, noAuthenticator),
    onClose(fn) {
      closers.push(fn);
    },
    close() {
      closed ??= (async () => {
        for (const fn of closers.reverse()) {
          try {
            await fn();
          } catch (err) {
            logger.warn('error while closing', { error: err instanceof Error ? err.message : String(err) });
          }
        }
      })();
      return closed;
    },
  };
  if (opts.authenticator) {
    try {
      runtime.authenticate = bearerAuthenticator(keys, await opts.authenticator(runtime));
    } catch (err) {
      await runtime.close();
      throw err;
    }
  }
  return runtime;
}
