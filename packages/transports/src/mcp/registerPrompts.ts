import type { GetPromptResult, Server } from '@modelcontextprotocol/server';
import {
  type CoreError,
  keyMayCall,
  keyRefusalOf,
  loadedProcedureIndex,
  type Identity,
  type PromptDefinition,
} from '@ai-backend/core/internal';
import { mcpContext } from './callContext.js';
import { toMcpError } from './mcpErrors.js';
import { counted, type McpServerDeps, type McpSessionState } from './sessionState.js';
import { gatewayPrompts, identityOf } from './gatewayTools.js';
import { recordRefusal } from './recordRefusal.js';

/** prompts/list and prompts/get from the server's prompt registry. */
export function registerPrompts(server: Server, deps: McpServerDeps, state: McpSessionState): void {
  const registry = deps.services.prompts;
  server.setRequestHandler(
    'prompts/list',
    (_request, ctx) =>
      ({
        prompts: [
          ...registry
            .list()
            .filter(keyMayGet(deps, identityOf(ctx)))
            .map((p) => ({
              name: p.name,
              ...(p.title ? { title: p.title } : {}),
              ...(p.description ? { description: p.description } : {}),
              arguments: (p.arguments ?? []).map((a) => ({
                name: a.name,
                ...(a.description ? { description: a.description } : {}),
                required: a.required ?? false,
              })),
            })),
          ...gatewayPrompts(deps, ctx),
        ],
      }) as never,
  );

  server.setRequestHandler('prompts/get', (request, ctx) =>
    counted(state, async () => {
      const { name, arguments: args = {} } = request.params;
      try {
        // An upstream's prompt (the MCP gateway): `<server>__<prompt>`, never one of ours.
        if (deps.services.gateway.active && !registry.get(name)) {
          const upstream = await deps.services.gateway.content.getPrompt(identityOf(ctx), name, args, ctx.mcpReq.signal);
          if (upstream) return upstream as GetPromptResult;
          // One its API key may not get is answered as unknown below; the refusal is recorded.
          recordRefusal(deps, ctx, deps.services.gateway.content.keyRefusal(identityOf(ctx), { type: 'ref/prompt', name }), name);
        }
        const use = { kind: 'prompt', name, args } as const;
        const callCtx = mcpContext(
          deps,
          state,
          server,
          ctx,
          { use, requestState: await deps.seal.claim(ctx, use) },
          request.params._meta?.progressToken as string | number | undefined,
        );
        const result = await registry.render(name, args, callCtx);
        return result as GetPromptResult;
      } catch (err) {
        throw toMcpError(deps.services.logger, err, 'prompts/get');
      }
    }),
  );
}

/**
 * For an API key, the prompts its rules let it get (a prompt rendered by a procedure is that
 * procedure's call: keyAccess, scopes, tools rule), as tools/list shows a key only its tools;
 * completion/complete answers only for these too.
 */
export function keyMayGet(deps: McpServerDeps, identity: Identity | null): (p: PromptDefinition) => boolean {
  if (identity?.via !== 'apiKey') return () => true;
  const index = loadedProcedureIndex(deps.services.router);
  return (p) => p.procedure === undefined || keyMayCall(p.procedure, index.get(p.procedure)?.meta, identity);
}

/** The refusal behind keyMayGet's no (the key rule of the procedure that renders `p`), for the security log. */
export function keyPromptRefusal(deps: McpServerDeps, identity: Identity | null, p: PromptDefinition): CoreError | undefined {
  if (identity?.via !== 'apiKey' || p.procedure === undefined) return undefined;
  return keyRefusalOf(p.procedure, loadedProcedureIndex(deps.services.router).get(p.procedure)?.meta, identity);
}
