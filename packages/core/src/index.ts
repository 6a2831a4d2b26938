/**
 * `@ai-backend/core`: the documented public API (what `ai-backend` re-exports, plus the config,
 * storage and webhook helpers the docs show). Everything else is internal to the workspace and
 * lives in `@ai-backend/core/internal`; src/publicSurface.test.ts keeps this list deliberate.
 * @module
 */
// Configuration (docs/configuration.md).
export { ConfigSchema, defineConfig, type ConfigInput, type ResolvedConfig } from './config/schema.js';
export { resolveConfig, checkConfig, ConfigError, type ConfigProblem } from './config/resolveConfig.js';
export type { AuthVerifiers, AuthMode, OAuthServerState, ResolvedAuth } from './config/resolveAuth.js';
export { configFromEnv, mergeConfig } from './config/fromEnv.js';
export { ENV_VARIABLES, type EnvVariable } from './config/envVariables.js';
export { redactConfig } from './config/redact.js';

// Errors (docs/procedures.md#errors).
export { CoreError, isCoreError, type CoreErrorCode } from './kernel/CoreError.js';

// Custom routers (docs/procedures.md#custom-routers).
export { router, middleware, mergeRouters } from './pipeline/init.js';
export { publicProcedure, protectedProcedure, adminProcedure, withServices } from './pipeline/procedures.js';
export type { Context } from './pipeline/context.js';
export type { AiBackendServices } from './runtime/AiBackendServices.js';
export type { Identity } from './kernel/identity.js';
export type { KeyAccess, ProcedureMeta, ToolAnnotations, McpPromptMeta, McpResourceMeta } from './pipeline/meta.js';
export { KEY_SCOPES, type KeyScope } from './services/apiKeys/keyScopes.js';
export type { AppRouter, AppRouterWith, CustomRouters } from './routers/appRouter.js';

// Storage (docs/storage.md): the interface a custom store implements, and the built-in ones.
export type {
  Storage,
  SetOptions,
  IncrementOptions,
  LogEntry,
  ReadLogOptions,
  TransactOptions,
  TxRead,
  TxWrite,
  TxPlan,
} from './kernel/Storage.js';
export { MemoryStorage } from './storage/MemoryStorage.js';
export { createStorage, type StorageConfig } from './storage/createStorage.js';

// MCP resources (docs/mcp.md).
export type {
  ResourceDefinition,
  ResourceTemplateDefinition,
  ResourceContent,
  SchemeHandler,
} from './services/resources/ResourceRegistry.js';
export { createHttpSchemeHandlers, type HttpSchemeHandlerOptions } from './services/resources/httpSchemeHandler.js';

// Webhooks (docs/billing.md, docs/operations.md).
export {
  verifyPurchaseWebhook,
  handlePurchaseWebhook,
  type VerifyPurchaseWebhookOptions,
  type PurchaseEvent,
  type PurchaseWebhookResult,
} from './services/billing/purchaseWebhook.js';
export { signAlert, verifyAlertSignature, ALERT_SIGNATURE_HEADER } from './services/governance/signAlert.js';
