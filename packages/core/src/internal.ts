/**
 * Everything core has, for the workspace packages (transports, auth, cli, test-utils) and the
 * end-to-end tests: `@ai-backend/core/internal`. Not a stable API; applications use the root entry
 * (`@ai-backend/core`, documented) or, better, `ai-backend`.
 * @module
 */
export * from './config/index.js';
export { CoreError, isCoreError, coreErrorOf } from './kernel/CoreError.js';
export { CORE_ERROR_TABLE, JSONRPC_CODE_BY_TRPC, JSONRPC_STANDARD } from './pipeline/errorTable.js';
export type { CoreErrorCode } from './kernel/CoreError.js';
export * from './storage/index.js';
export { t, router, middleware, mergeRouters, createCallerFactory } from './pipeline/init.js';
export {
  fetchRequestHandler,
  getHTTPStatusCode,
  getTRPCErrorFromUnknown,
  getTRPCErrorShape,
  transformTRPCResponse,
  TRPCError,
} from './pipeline/trpcRuntime.js';
export { publicProcedure, protectedProcedure, adminProcedure, withServices } from './pipeline/procedures.js';
export { callContext, runtimeOf, type CallContext } from './pipeline/callContext.js';
export { servicesOf, runtimeOfServices } from './runtime/serverServices.js';
export type { AiBackendServices } from './runtime/AiBackendServices.js';
export {
  accessDecision,
  accessDecisionsMade,
  keyMayCall,
  keyRefusalOf,
  decisionError,
  authConfigured,
  callScopeOf,
  keyAccessOf,
  keyScopesOf,
  toolCallNeedsAuth,
  toolNameOf,
  type AccessDecision,
  type CallKind,
} from './pipeline/accessPolicy.js';
export { RequestScope, signInScopes, type RequestFacts, type ParsedCall, type Challenge } from './pipeline/requestScope.js';
export { entryGateway, type EntryGateway } from './pipeline/entryGateway.js';
export { assertReadable, readResourceAs, resourceReader, type ResourceTarget } from './pipeline/resourceAccess.js';
export { authenticateRequest, type RequestAuth, type RequestAuthenticator } from './pipeline/authenticateRequest.js';
export { bearerChallenge, type BearerChallenge } from './pipeline/bearerChallenge.js';
export {
  toWireError,
  wireErrorData,
  formatTrpcError,
  toJsonRpcError,
  toMcpToolError,
  logWireError,
  MCP_ERROR_META_KEY,
  type WireError,
} from './pipeline/wireError.js';
export { mcpResourceUrl, publicBaseUrl, resourceMetadataUrl } from './runtime/publicBaseUrl.js';
export { forwardedClientIp, requestClientIp } from './runtime/forwardedClientIp.js';
export type { Context, RequestInfo, McpCallContext } from './pipeline/context.js';
export type { Identity, TransportName, ApiKeyGrant } from './kernel/identity.js';
export { idpSubject, jwtSubject, isEmailVerified, IDP_SUBJECT_PREFIX } from './kernel/subjectId.js';
export { isUnicodeText } from './kernel/isUnicodeText.js';
export type { KeyAccess, ProcedureMeta, ToolAnnotations, McpPromptMeta, McpResourceMeta, LongRunningMeta } from './pipeline/meta.js';
export { KEY_SCOPES, BUILT_IN_KEY_SCOPES, type KeyScope } from './services/apiKeys/keyScopes.js';
export {
  invoke,
  isRouterLoaded,
  loadRouter,
  loadedProcedureIndex,
  procedureIndex,
  type InvokeResult,
  type InvokeOptions,
  type ProcedureInfo,
} from './pipeline/invoke.js';
export { isAsyncIterable, isFinishEvent, isTextEvent, type TextEvent, type FinishEvent } from './kernel/streamEvents.js';
export { isBuiltInPath } from './kernel/namespaces.js';
export { builtinRouter, createAppRouter, type AppRouter, type AppRouterWith, type CustomRouters } from './routers/appRouter.js';
export type { KeySeries, OverviewSeries } from './routers/admin/overviewSeries.js';
export { createRuntime, type CreateRuntimeOptions } from './createRuntime.js';
export type { Runtime, HealthProbe } from './runtime/Runtime.js';
export {
  GATEWAY_OAUTH_CALLBACK_PATH,
  GATEWAY_OAUTH_CLIENT_METADATA_PATH,
  gatewayClientMetadata,
} from './services/gateway/credentials/callbackPaths.js';
export { UpstreamCredentials, type ResolvedCredentials } from './services/gateway/credentials/index.js';
export type { Authenticator, AuthResult, AuthFacts } from './kernel/identity.js';
export { ApiKeyService, type KeyActor } from './services/apiKeys/ApiKeyService.js';
export { API_KEY_PATTERN, API_KEY_PREFIX, isApiKeyLike } from './services/apiKeys/apiKeyFormat.js';
export { keyAllowsProcedure, keyResourceRefusal } from './services/apiKeys/keyRules.js';
export type { ApiKeyRecord, ApiKeyView, KeyRules } from './services/apiKeys/apiKeyTypes.js';
export { Stats } from './runtime/Stats.js';
export { LocalSignals, type Signals, type SignalHandler } from './kernel/Signals.js';
export { SESSION_REVOKED } from './kernel/identity.js';
export { createLogger, type Logger, type LogLevel } from './kernel/Logger.js';
export { checkHealth, healthFor, type HealthReport } from './runtime/checkHealth.js';
export {
  ResourceRegistry,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  type ResourceContent,
  type SchemeHandler,
} from './services/resources/ResourceRegistry.js';
export { compileUriTemplate, type UriTemplate } from './lib/uriTemplate.js';
export { AgedMap } from './lib/AgedMap.js';
export { InFlight } from './lib/InFlight.js';
export { RecentMap } from './lib/RecentMap.js';
export { sha256 } from './lib/sha256.js';
export { packageVersion } from './lib/packageVersion.js';
export { guardedFetch, guardedUrlProblem, isPublicAddress, type GuardedFetchOptions, type GuardedResponse } from './net/guardedFetch.js';
export { createHttpSchemeHandlers, type HttpSchemeHandlerOptions } from './services/resources/httpSchemeHandler.js';
export {
  createWorkspaceSchemeHandler,
  connectWorkspaceResources,
  workspaceResourceUri,
  type WorkspaceFiles,
} from './services/resources/workspaceSchemeHandler.js';
export * from './services/workspaces/index.js';
export {
  PromptRegistry,
  completeFrom,
  type PromptDefinition,
  type PromptArgumentDefinition,
  type PromptMessage,
  type PromptContent,
  type PromptResult,
  type CompletionResult,
} from './services/prompts/PromptRegistry.js';
export * from './services/ai/index.js';
export * from './services/billing/index.js';
export type { BudgetCrossing, BudgetRefusal, BudgetMetric, PeriodSpend } from './services/spend/periodSpend.js';
export type { Metering, Hold, HoldRequest, Charge, MeteredUsage, SettledUsage, UsageMetadata } from './services/metering/Metering.js';
export * from './services/vault/index.js';
export {
  RateLimiter,
  rateLimitCaller,
  storeOutageFor,
  type RateLimitDecision,
  type RateLimitKind,
  type RateLimitSettings,
  type RateLimiterOptions,
} from './services/rateLimit/RateLimiter.js';
export {
  SecurityLog,
  type SecurityEvent,
  type SecurityEventType,
  type SecuritySeverity,
  type SecurityLogSettings,
} from './services/security/SecurityLog.js';
export {
  keyRefusalEvent,
  recordKeyRefusal,
  KEY_REFUSAL_RULES,
  type KeyRefusalRule,
  type RefusalSite,
} from './services/security/keyRefusalEvent.js';
export { mcpAccessRulesActive, toolsListNeedsAuth } from './services/security/accessRules.js';
export * from './apiDescription/index.js';
export * from './observability/index.js';
export * from './services/governance/index.js';
export {
  McpGateway,
  type AdminServerStatus,
  type GatewayCredentials,
  type GatewayCall,
  type ServerStatus,
} from './services/gateway/McpGateway.js';
export { exposedName, splitExposedName, NAME_SEPARATOR } from './services/gateway/gatewayAccess.js';
export type { GatewayTool } from './services/gateway/gatewayTools.js';
export { mcpResponseModes, type McpResponseModes } from './config/mcpResponseModes.js';
