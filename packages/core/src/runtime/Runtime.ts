import type { Signals } from '../kernel/Signals.js';
import type { RecentCalls } from '../observability/RecentCalls.js';
import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../config/schema.js';
import type { Storage } from '../kernel/Storage.js';
import type { AuthFacts, AuthResult } from '../kernel/identity.js';
import type { Logger } from '../kernel/Logger.js';
import type { Stats } from './Stats.js';
import type { Metrics } from '../observability/Metrics.js';
import type { UserDirectory } from '../services/directory/UserDirectory.js';
import type { AlertOutbox } from '../services/governance/AlertOutbox.js';
import type { ResourceRegistry } from '../services/resources/ResourceRegistry.js';
import type { WorkspaceService } from '../services/workspaces/WorkspaceService.js';
import type { ClientWorkspaceService } from '../services/workspaces/ClientWorkspaceService.js';
import type { PromptRegistry } from '../services/prompts/PromptRegistry.js';
import type { BillingService } from '../services/billing/BillingService.js';
import type { Retention } from '../services/retention/Retention.js';
import type { KeyVault } from '../services/vault/KeyVault.js';
import type { UpstreamCredentials } from '../services/gateway/credentials/UpstreamCredentials.js';
import type { AiService } from '../services/ai/AiService.js';
import type { RateLimiter } from '../services/rateLimit/RateLimiter.js';
import type { SecurityLog } from '../services/security/SecurityLog.js';
import type { ApiKeyService } from '../services/apiKeys/ApiKeyService.js';
import type { McpGateway } from '../services/gateway/McpGateway.js';

/** A health probe of one dependency, for /health/ready and admin.healthCheck. */
export type HealthProbe = () => Promise<{ ok: boolean; detail?: string }>;

/**
 * The server's config, storage and services: one per server, built by createRuntime, closed by
 * stop(). Only the composition root (createServer) and core's pipeline hold it; procedures get
 * their namespace's services (provide), entry points the entry gateway and the services they
 * name, embedders and custom routers AiBackendServices. Not part of the public API.
 */
export interface Runtime {
  readonly config: ResolvedConfig;
  readonly storage: Storage;
  /**
   * Hot, shared, short-lived state (rate-limit windows, anonymous budgets, MCP session records
   * and event streams): Redis when `storage.shared` is 'redis', otherwise the same as `storage`.
   */
  readonly shared: Storage;
  readonly stats: Stats;
  /** Prometheus metrics of this instance (undefined when `metrics.enabled` is false). */
  readonly metrics: Metrics | undefined;
  /** The most recent procedure calls on this instance (the console's Live view). */
  readonly recentCalls: RecentCalls;
  /** Signed alert webhooks through an outbox in the store (`alerts`). */
  readonly alerts: AlertOutbox;
  /** Users seen by this server (sub, e-mail, scopes, administrator flag), for admin.getUserInfo. */
  readonly users: UserDirectory;
  /** Cross-instance signals (Redis pub/sub when Redis is configured, else this process only). */
  readonly signals: Signals;
  /** Named caches admin.clearCache can empty ('tokens', 'models', ...); registered by their owners. */
  readonly caches: Map<string, () => void | Promise<void>>;
  readonly logger: Logger;
  readonly resources: ResourceRegistry;
  /** Server workspaces (guarded file access) and their change events. */
  readonly workspaces: WorkspaceService;
  /** Client workspaces (MCP roots) per caller; never grant server file access. */
  readonly clientWorkspaces: ClientWorkspaceService;
  /** MCP prompts: procedures with meta.mcp.prompt plus any registered at run time. */
  readonly prompts: PromptRegistry;
  /** Token ledger, metering of ai calls, preferences; `billing.events` for notifications. */
  readonly billing: BillingService;
  /** `storage.retention`: archiving of old ledger, usage and credit history (admin.runRetention). */
  readonly retention: Retention;
  /** Encrypted BYOK keys. */
  readonly vault: KeyVault;
  /** Per-user credentials for upstream MCP servers marked perUser (headers, OAuth grants), encrypted. */
  readonly upstreamCredentials: UpstreamCredentials;
  /** Provider/model registry, server system prompts and text generation (the ai namespace). */
  readonly ai: AiService;
  /** `mcp.rateLimiting`: per-caller request and tool-call counters in storage. */
  readonly rateLimit: RateLimiter;
  /** `mcp.securityLogging`: structured security events (auth failures, denials, rate-limit hits). */
  readonly security: SecurityLog;
  /** API keys (`aib_…`): records, rules, and their verification (docs/api-keys.md). */
  readonly keys: ApiKeyService;
  /** The MCP gateway: upstream MCP servers (mcpServers), their connections, permissions and calls (docs/mcp-gateway.md). */
  readonly gateway: McpGateway;
  /** The application router (built-in namespaces plus customRouters). */
  readonly router: AnyRouter;
  /**
   * Verify a bearer token: an `aib_…` API key by the key service, anything else by the installed
   * authenticator. `facts.ip` is the client address (API keys limited to some addresses need it).
   */
  authenticate(token: string, facts?: AuthFacts): Promise<AuthResult>;
  /** Named health probes (storage is always there). */
  readonly health: Map<string, HealthProbe>;
  /** Run on close, in reverse order of registration. */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}
