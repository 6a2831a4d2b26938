/**
 * `@ai-backend/transports/mcp`: the MCP handler for embedders who mount it themselves.
 * Kept off the main entry so that importing createServer does not load the MCP SDK.
 */
export { McpHandler, type McpHandlerOptions } from './mcpHandler.js';
export { mcpHandlerDeps, mcpServices, type McpHandlerDeps, type McpServices } from './mcpServices.js';
export { buildToolCatalog, toolProcedures, type ToolCatalog, type CatalogTool } from './toolCatalog.js';
