import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpSessionState } from './sessionState.js';

/**
 * logging/setLevel: the session's minimum level for notifications/message. Kept per server
 * (one server per session), replacing the SDK's map keyed by session id.
 */
export function registerLogging(server: Server, state: McpSessionState): void {
  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    state.logLevel = request.params.level;
    return {};
  });
}
