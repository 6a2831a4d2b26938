import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { RequestStateSeal } from './requestStateSeal.js';
import type { EntryGateway, Runtime } from '@ai-backend/core/internal';
import type { McpTasks } from './tasks/McpTasks.js';
import type { ToolCatalog } from './toolCatalog.js';

/**
 * How one MCP server instance is served:
 * - 'stateful': a 2025-11-25 / 2025-06-18 session (initialize, Mcp-Session-Id, server-to-client requests);
 * - 'stateless': one 2025 request without a session (mcp.sessionMode 'stateless');
 * - 'modern': one 2026-07-28 request (per-request `_meta` envelope, no session, no server-to-client requests).
 */
export type McpServeMode = 'stateful' | 'stateless' | 'modern';

/**
 * The services an MCP server's capability handlers use: the router and logger of the entry
 * gateway, the prompt and resource registries, the MCP gateway (upstream servers) and the client
 * workspaces (roots). Built once by McpHandler; never the whole runtime.
 */
export type McpServerServices = Pick<EntryGateway, 'router' | 'logger'> &
  Pick<Runtime, 'prompts' | 'resources' | 'gateway' | 'clientWorkspaces' | 'security'>;

/** What every capability handler of one MCP server (one session or one request) shares. */
export interface McpServerDeps {
  services: McpServerServices;
  catalog: ToolCatalog;
  mode: McpServeMode;
  /** The session id once initialize completed (stateful mode). */
  sessionId: () => string | undefined;
  /** Seals and verifies the `requestState` of multi round-trip requests. */
  seal: RequestStateSeal;
  /** The Tasks extension (2026-07-28 requests only). */
  tasks?: McpTasks;
}

/** Mutable per-session state (what a parked 2025 session must keep is read from here). */
export interface McpSessionState {
  /** Minimum level of notifications/message sent to this client (logging/setLevel). */
  logLevel: LoggingLevel;
  /** Resource URIs this session subscribed to (2025 sessions; created on the first subscribe). */
  subscriptions?: Set<string>;
  /**
   * Calls (tools/call, prompts/get, resources/read) still running. A call outlives its HTTP
   * stream when the server closes the stream for polling (SEP-1699), so the stream count alone
   * cannot tell that a session is idle.
   */
  running: number;
}

/** Run one call of a session, counted in `state.running` while it runs. */
export async function counted<T>(state: McpSessionState, call: () => Promise<T>): Promise<T> {
  state.running++;
  try {
    return await call();
  } finally {
    state.running--;
  }
}

export const LOG_LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

export function levelEnabled(state: McpSessionState, level: LoggingLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(state.logLevel);
}
