import type { Server } from '@modelcontextprotocol/server';
import type { McpSessionState } from './sessionState.js';

/**
 * logging/setLevel (2025 sessions): the session's minimum level for notifications/message,
 * kept per server (one server per session) with 'info' until the client sets one. 2026-07-28
 * requests carry their level in `_meta` instead, which the SDK applies itself.
 */
export function registerLogging(server: Server, state: McpSessionState): void {
  server.setRequestHandler('logging/setLevel', (request) => {
    state.logLevel = request.params.level;
    return {};
  });
}
