import { randomUUID } from 'node:crypto';
import { inputRequired, type InputRequiredResult, type Server, type ServerContext } from '@modelcontextprotocol/server';
import { clientCapabilitiesOf } from './callContext.js';
import type { McpServerDeps } from './sessionState.js';

const ROOTS_KEY = 'roots';

/**
 * MCP roots for a 2026-07-28 request, which has no session to remember them: a tool marked
 * `meta.mcp.roots` (it reads client workspaces) first answers with an input-required
 * roots/list; the client's retry carries the roots, which become this one call's client
 * workspaces under a request-scoped key, through the same validation as a 2025 session's roots
 * (file:// only, bounded), and are dropped when the call ends. A client that did not declare the
 * roots capability is not asked (the call sees registered workspaces only).
 */
export async function withRequestRoots<T>(
  deps: McpServerDeps,
  server: Server,
  ctx: ServerContext,
  run: (deps: McpServerDeps) => Promise<T>,
): Promise<T | InputRequiredResult> {
  if (!clientCapabilitiesOf(server)?.roots) return run(deps);
  const answer = ctx.mcpReq.inputResponses?.[ROOTS_KEY] as { roots?: unknown } | undefined;
  if (!Array.isArray(answer?.roots)) return inputRequired({ inputRequests: { [ROOTS_KEY]: inputRequired.listRoots() } });
  const roots = answer.roots.filter((r): r is { uri: string; name?: string } => typeof (r as { uri?: unknown } | null)?.uri === 'string');
  const key = `request:${randomUUID()}`;
  deps.services.clientWorkspaces.setSessionRoots(key, roots);
  try {
    return await run({ ...deps, sessionId: () => key });
  } finally {
    await deps.services.clientWorkspaces.clearSession(key);
  }
}
