export type { AiBackendServices } from '@ai-backend/core/internal';
export { createMcpHandler, type EmbeddedMcpHandler, type EmbeddedMcpOptions } from './mcp/createMcpHandler.js';
export { createServer, type AiBackendServer, type BoundAddress, type CreateServerOptions } from './createServer.js';
export { jsonRpcHandler } from './jsonrpc/jsonRpcHandler.js';
export { trpcHandler } from './trpc/trpcHandler.js';
export { cors } from './edge/cors.js';
