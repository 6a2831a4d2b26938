import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { GetPromptRequestSchema, ListPromptsRequestSchema, type GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpContext } from './callContext.js';
import { toMcpError } from './mcpErrors.js';
import type { McpServerDeps, McpSessionState } from './sessionState.js';

/** prompts/list and prompts/get from the runtime's prompt registry. */
export function registerPrompts(server: Server, deps: McpServerDeps, state: McpSessionState): void {
  const registry = deps.runtime.prompts;
  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: registry.list().map((p) => ({
      name: p.name,
      ...(p.title ? { title: p.title } : {}),
      ...(p.description ? { description: p.description } : {}),
      arguments: (p.arguments ?? []).map((a) => ({ name: a.name, ...(a.description ? { description: a.description } : {}), required: a.required ?? false })),
    })),
  }));

  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    try {
      const ctx = mcpContext(deps, state, server, extra, name, request.params._meta?.progressToken);
      const result = await registry.render(name, args, ctx);
      return result as GetPromptResult;
    } catch (err) {
      throw toMcpError(deps.runtime, err, 'prompts/get');
    }
  });
}
