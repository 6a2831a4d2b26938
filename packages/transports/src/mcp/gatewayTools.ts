import { ProtocolError, ProtocolErrorCode, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import {
  invoke,
  logWireError,
  splitExposedName,
  toMcpToolError,
  toWireError,
  type Context,
  type Identity,
} from '@ai-backend/core/internal';
import type { McpRequestFacts } from './callContext.js';
import type { McpServerDeps } from './sessionState.js';
import { toolsListFor } from './toolCatalog.js';

/**
 * The MCP gateway's one hook into /mcp (docs/mcp-gateway.md): upstream tools appear after ours in
 * tools/list, and a tools/call of one runs the `gateway.callTool` procedure through core's invoke
 * seam, with the call's own context (its signal: notifications/cancelled reaches the upstream;
 * its progress: the upstream's progress reaches the client). A tool the caller may not use is
 * absent from its list and its call is refused exactly like an unknown tool.
 */
export function identityOf(ctx: ServerContext): Identity | null {
  return (ctx.http?.authInfo?.extra?.facts as McpRequestFacts | undefined)?.scope.identity ?? null;
}

/** Our tools, then the upstream tools this caller may use. */
export async function listWithGateway(deps: McpServerDeps, ctx: ServerContext): Promise<{ tools: Array<Record<string, unknown>> }> {
  const own = toolsListFor(deps.catalog, identityOf(ctx));
  const gateway = deps.services.gateway;
  if (!gateway.active) return own;
  const upstream = await gateway.listTools(identityOf(ctx));
  // Only what MCP defines goes out: never our bookkeeping fields (server, upstreamName).
  const tools = upstream.map(({ server: _s, upstreamName: _u, ...t }) => t as Record<string, unknown>);
  return { tools: [...own.tools, ...tools] };
}

/** Is `name` an upstream tool this caller may call? */
export function isGatewayTool(deps: McpServerDeps, ctx: ServerContext, name: string): boolean {
  const gateway = deps.services.gateway;
  return gateway.active && gateway.resolveTool(identityOf(ctx), name) !== undefined;
}

/** tools/call of an upstream tool through the gateway.callTool procedure; its failures are tool errors the model can read. */
export async function callGatewayTool(
  deps: McpServerDeps,
  name: string,
  args: Record<string, unknown> | undefined,
  callCtx: Context,
): Promise<CallToolResult> {
  const parts = splitExposedName(name);
  // search_tools / call_tool have no server prefix: they are the gateway's own. They run through
  // the same procedure as every upstream tool, so statistics, limits and key rules count them too.
  const input = parts ? { server: parts.server, tool: parts.name, arguments: args ?? {} } : { tool: name, arguments: args ?? {} };
  const result = await invoke(deps.services.router, 'gateway.callTool', input, callCtx);
  if (result.ok) return result.data as CallToolResult;
  // call_tool naming a tool the caller may not use is that call's own error (the model can correct it), not an unknown tool.
  return failed(deps, result.error, parts ? name : undefined, await declaresOutput(deps, callCtx.identity, name));
}

/**
 * Whether the upstream tool, as this caller's tools/list shows it, declares an outputSchema. Asked
 * on the failure path only: a client that listed such a tool validates any structuredContent of
 * its results against that schema, even with isError (the 1.x SDK client does), so our error
 * object there would turn a readable tool error (402, 429...) into a schema-validation failure.
 */
async function declaresOutput(deps: McpServerDeps, identity: Identity | null, name: string): Promise<boolean> {
  const tools = await deps.services.gateway.listTools(identity).catch(() => undefined);
  // Unknown (the upstream cannot be listed now): the client may still hold the schema from before.
  if (!tools) return true;
  return tools.some((t) => t.name === name && t.outputSchema !== undefined);
}

function failed(deps: McpServerDeps, error: unknown, name: string | undefined, hasOutputSchema: boolean): CallToolResult {
  const wire = toWireError(error);
  // An upstream tool that vanished between the check and the call is still an unknown tool.
  if (name !== undefined && wire.appCode === 'NOT_FOUND' && (wire.details as { reason?: string } | undefined)?.reason === 'unknown_tool') {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool: ${name.slice(0, 200)}`);
  }
  logWireError(deps.services.logger, wire, { transport: 'mcp', path: 'gateway.callTool' });
  return toMcpToolError(wire, { structuredContent: !hasOutputSchema }) as CallToolResult;
}

/** Upstream prompts (`<server>__<prompt>`) after ours, for the servers this caller may use. */
export function gatewayPrompts(deps: McpServerDeps, ctx: ServerContext): Array<Record<string, unknown>> {
  return deps.services.gateway.active ? deps.services.gateway.content.listPrompts(identityOf(ctx)) : [];
}

/** Upstream resources (their own URIs) after ours; the bookkeeping field `server` stays here. */
export function gatewayResources(deps: McpServerDeps, ctx: ServerContext): Array<Record<string, unknown>> {
  if (!deps.services.gateway.active) return [];
  return deps.services.gateway.content.listResources(identityOf(ctx)).map(({ server: _s, ...r }) => r);
}

/** Upstream resource templates (their own URI templates) after ours, for the same callers as their resources. */
export function gatewayResourceTemplates(deps: McpServerDeps, ctx: ServerContext): Array<Record<string, unknown>> {
  if (!deps.services.gateway.active) return [];
  return deps.services.gateway.content.listResourceTemplates(identityOf(ctx)).map(({ server: _s, ...t }) => t);
}
