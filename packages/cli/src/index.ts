/**
 * ai-backend: the one package users install. Re-exports the public API of the workspace
 * packages so `import { createServer, router, publicProcedure } from 'ai-backend'` works.
 * @module
 */
export { createServer, type AiBackendServer, type BoundAddress, type CreateServerOptions } from '@ai-backend/transports';
// Embedding the MCP endpoint in one's own app, from what server.ready() resolves to (docs/mcp.md).
export { createMcpHandler, type EmbeddedMcpHandler, type EmbeddedMcpOptions } from '@ai-backend/transports';
export {
  defineConfig,
  // Config problems: createServer and loadConfig throw it, with every problem and its key path.
  ConfigError,
  type ConfigProblem,
  // What a custom-router author builds with (docs/procedures.md, "Custom routers").
  router,
  middleware,
  mergeRouters,
  publicProcedure,
  protectedProcedure,
  adminProcedure,
  withServices,
  CoreError,
  MemoryStorage,
  type AppRouter,
  type AppRouterWith,
  type ConfigInput,
  type ResolvedConfig,
  type Context,
  type AiBackendServices,
  type Identity,
  type ProcedureMeta,
  type Storage,
  type ResourceDefinition,
  type SchemeHandler,
  // An alert receiver verifies our signed webhooks with these (docs/operations.md, Alerts).
  verifyAlertSignature,
  signAlert,
  ALERT_SIGNATURE_HEADER,
} from '@ai-backend/core';
export { loadConfig } from './loadConfig.js';
