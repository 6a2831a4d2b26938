import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Runtime } from '@ai-backend/core';
import { registerCompletion } from './registerCompletion.js';
import { registerLogging } from './registerLogging.js';
import { registerPrompts } from './registerPrompts.js';
import { registerResources } from './registerResources.js';
import { registerTools } from './registerTools.js';
import { startRootsSync, type RootsSync } from './rootsSync.js';
import type { McpServerDeps, McpSessionState } from './sessionState.js';
import type { ToolCatalog } from './toolCatalog.js';

export type { McpRequestFacts } from './callContext.js';

export const SERVER_INFO = { name: 'ai-backend', version: '0.1.0' } as const;

export interface McpServerHandle {
  server: Server;
  roots: RootsSync;
}

/**
 * One MCP server (per session, or per request in stateless mode): tools from procedures with
 * MCP metadata, prompts and resources from the runtime's registries, completion, logging, and
 * (stateful) resource subscriptions and roots. Each capability lives in its own register* file.
 */
export function createMcpServer(runtime: Runtime, catalog: ToolCatalog, sessionId: () => string | undefined, mode: 'stateful' | 'stateless' = 'stateful'): McpServerHandle {
  const stateful = mode === 'stateful';
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: false },
      prompts: { listChanged: stateful },
      resources: { subscribe: stateful, listChanged: stateful },
      logging: {},
      completions: {},
    },
    instructions: 'ai-backend: AI text generation, server workspaces and helper tools. Call tools/list to see what is available.',
  });
  const deps: McpServerDeps = { runtime, catalog, mode, sessionId };
  // Until the client sets a level, debug chatter stays off.
  const state: McpSessionState = { logLevel: 'info' };

  registerLogging(server, state);
  registerTools(server, deps, state);
  registerPrompts(server, deps, state);
  registerCompletion(server, deps);
  const stopResources = registerResources(server, deps, state);
  const roots = startRootsSync(server, deps);
  const stopPrompts = stateful ? runtime.prompts.onListChanged(() => void server.sendPromptListChanged().catch(() => undefined)) : () => undefined;

  server.onclose = () => {
    stopResources();
    stopPrompts();
    roots.close();
  };
  return { server, roots };
}
