import type { Handler } from 'hono';
import { loadRouter, runtimeOfServices, type AiBackendServices, type ResolvedConfig } from '@ai-backend/core/internal';
import type { McpHandlerOptions } from './mcpHandler.js';
import { mcpHandlerDeps } from './mcpServices.js';

/** The options an embedder may set (docs/mcp.md, "Options of the MCP handler"); defaults come from the server's `mcp.sessions`. */
export type EmbeddedMcpOptions = Omit<McpHandlerOptions, 'streams'>;

/** An MCP endpoint to mount in one's own app: `app.all('/mcp', mcp.handle)`. */
export interface EmbeddedMcpHandler {
  /** The Hono handler serving MCP Streamable HTTP (POST, GET, DELETE) at the path it is mounted on. */
  readonly handle: Handler;
  /** Open sessions, live or parked. */
  readonly sessionCount: number;
  /** Close every session; call it when the app stops (server.stop() does not know this handler). */
  close(): Promise<void>;
}

/**
 * The MCP handler of a running server, for an app that mounts it itself: built from what
 * `server.ready()` resolves to (AiBackendServices), not from the server's internal runtime. It
 * serves the server's tools, prompts and resources with the server's config, auth and limits,
 * like the server's own /mcp; the HTTP edge (host and origin checks, body limits, CORS) is the
 * app's to put in front, as createServer does. The MCP SDK loads here, on the first call, not when
 * `ai-backend` is imported.
 *
 * @example
 * const services = await backend.ready();
 * const mcp = await createMcpHandler(services);
 * app.all('/tools/mcp', mcp.handle);
 */
export async function createMcpHandler(services: AiBackendServices, options: EmbeddedMcpOptions = {}): Promise<EmbeddedMcpHandler> {
  const runtime = runtimeOfServices(services);
  const [{ McpHandler }] = await Promise.all([import('./mcpHandler.js'), loadRouter(runtime.router)]);
  return new McpHandler(mcpHandlerDeps(runtime), { ...mcpSessionOptions(runtime.config), ...options });
}

/** The MCP handler's session options from config (`mcp.sessions`; the answer modes it reads from `mcp.responseModes` itself). */
export function mcpSessionOptions(config: ResolvedConfig): EmbeddedMcpOptions {
  const s = config.mcp.sessions;
  return {
    ...(s.eventStore ? { eventStore: s.eventStore } : {}),
    sessionIdleMs: s.idleTimeoutMs,
    maxSessions: s.maxSessions,
    parkIdleMs: s.parkIdleMs,
    maxLiveSessions: s.maxLiveSessions,
    retryIntervalMs: s.retryIntervalMs,
  };
}
