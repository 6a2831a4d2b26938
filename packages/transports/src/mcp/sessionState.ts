import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';
import type { Runtime } from '@ai-backend/core';
import type { ToolCatalog } from './toolCatalog.js';

/** What every capability handler of one MCP server (one session) shares. */
export interface McpServerDeps {
  runtime: Runtime;
  catalog: ToolCatalog;
  /** 'stateless': one server per HTTP request, no server-to-client requests, no subscriptions. */
  mode: 'stateful' | 'stateless';
  /** The session id once initialize completed (stateful mode). */
  sessionId: () => string | undefined;
}

/** Mutable per-session state. */
export interface McpSessionState {
  /** Minimum level of notifications/message sent to this client (logging/setLevel). */
  logLevel: LoggingLevel;
}

export const LOG_LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

export function levelEnabled(state: McpSessionState, level: LoggingLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(state.logLevel);
}
