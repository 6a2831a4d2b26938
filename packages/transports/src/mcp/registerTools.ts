import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { invoke, logWireError, toMcpToolError, toWireError } from '@ai-backend/core';
import { mcpContext } from './callContext.js';
import type { CatalogTool } from './toolCatalog.js';
import type { McpServerDeps, McpSessionState } from './sessionState.js';

/** Tool results: text for every client, structuredContent when the tool declares an output schema. */
function toToolResult(tool: CatalogTool, data: unknown): CallToolResult {
  if (tool.meta?.mcp?.result === 'content') {
    const r = data as Partial<CallToolResult> | null;
    if (r && Array.isArray(r.content)) return r as CallToolResult;
  }
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  return {
    content: [{ type: 'text', text }],
    ...(tool.outputSchema && typeof data === 'object' && data !== null && !Array.isArray(data) ? { structuredContent: data as Record<string, unknown> } : {}),
  };
}

/**
 * tools/list and tools/call. A call runs the procedure through core's invoke seam (auth, rate
 * limits, input validation). Failures of the tool itself, including invalid arguments, are
 * tool results with isError (MCP 2025-11-25, SEP-1303: the model can read and correct them);
 * an unknown tool name is a protocol error.
 */
export function registerTools(server: Server, deps: McpServerDeps, state: McpSessionState): void {
  const { runtime, catalog } = deps;
  server.setRequestHandler(ListToolsRequestSchema, () => catalog.listResult);

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = catalog.byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${request.params.name.slice(0, 200)}`);
    const ctx = mcpContext(deps, state, server, extra, tool.name, request.params._meta?.progressToken);
    const result = await invoke(runtime.router, tool.path, request.params.arguments ?? {}, ctx);
    if (result.ok) return toToolResult(tool, result.data);
    if (ctx.req.signal.aborted) runtime.logger.debug('tool call cancelled', { tool: tool.name });
    const wire = toWireError(result.error);
    logWireError(runtime.logger, wire, { transport: 'mcp', path: tool.path });
    // A declared output schema would make clients validate the error against it.
    return toMcpToolError(wire, { structuredContent: !tool.outputSchema }) as CallToolResult;
  });
}
