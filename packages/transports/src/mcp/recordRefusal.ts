import type { ServerContext } from '@modelcontextprotocol/server';
import { recordKeyRefusal } from '@ai-backend/core/internal';
import type { McpRequestFacts } from './callContext.js';
import { identityOf } from './gatewayTools.js';
import type { McpServerDeps } from './sessionState.js';

/**
 * Record a refusal by the caller's API key that this MCP request answers as an unknown tool,
 * prompt, resource or template (core's recordKeyRefusal: one `key_refused` line, the shape of
 * every entry point). These answers come from the MCP handlers, not from a procedure call, so the
 * base middleware that records the others never sees them. `refusal` undefined: nothing to record.
 */
export function recordRefusal(deps: McpServerDeps, ctx: ServerContext, refusal: unknown, path: string): void {
  if (refusal === undefined) return;
  recordKeyRefusal(deps.services.security, identityOf(ctx), refusal, { transport: 'mcp', ip: requestIpOf(ctx), path });
}

/** The client address of an MCP request (for the security log). */
export function requestIpOf(ctx: { http?: { authInfo?: { extra?: Record<string, unknown> } } }): string | undefined {
  return (ctx.http?.authInfo?.extra?.facts as McpRequestFacts | undefined)?.scope.facts.ip;
}
