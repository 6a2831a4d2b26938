import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../config/schema.js';
import type { CoreError } from '../errors/CoreError.js';
import type { Storage } from '../storage/Storage.js';
import type { Identity } from '../trpc/context.js';
import type { Logger } from './Logger.js';
import type { Stats } from './Stats.js';
import type { ResourceRegistry } from '../services/resources/ResourceRegistry.js';

export type AuthResult = { ok: true; identity: Identity } | { ok: false; error: CoreError };

/** Verifies a bearer token; provided by @ai-backend/auth and installed by createServer. */
export type Authenticator = (token: string) => Promise<AuthResult>;

/** A health probe of one dependency, for /health/ready and admin.healthCheck. */
export type HealthProbe = () => Promise<{ ok: boolean; detail?: string }>;

/**
 * Everything a procedure can reach through `ctx.runtime`: the resolved config, storage and the
 * services. One per server; built by createRuntime, closed by stop().
 */
export interface Runtime {
  readonly config: ResolvedConfig;
  readonly storage: Storage;
  readonly stats: Stats;
  readonly logger: Logger;
  readonly resources: ResourceRegistry;
  /** The application router (built-in namespaces plus customRouters). */
  readonly router: AnyRouter;
  /** Verify a bearer token. */
  authenticate(token: string): Promise<AuthResult>;
  /** Install the token verifier (called by createServer with the auth package's). */
  setAuthenticator(authenticator: Authenticator): void;
  /** Named health probes (storage is always there). */
  readonly health: Map<string, HealthProbe>;
  /** Run on close, in reverse order of registration. */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}
