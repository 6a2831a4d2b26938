import type { Server } from '@modelcontextprotocol/server';
import { keyMayCall, loadedProcedureIndex, type Identity } from '@ai-backend/core/internal';
import { mcpContext } from './callContext.js';
import { resourceNotFound, toMcpError } from './mcpErrors.js';
import { counted, type McpServerDeps, type McpSessionState } from './sessionState.js';
import { gatewayResources, identityOf } from './gatewayTools.js';

/**
 * resources/list, resources/read, resources/templates/list and, for 2025 sessions,
 * resources/subscribe + unsubscribe: the registry's notifyUpdated (called by operators, custom
 * code or workspace watching) reaches subscribed sessions as notifications/resources/updated.
 * (2026-07-28 clients subscribe through subscriptions/listen, which McpHandler feeds.)
 * Returns a cleanup for when the session ends.
 */
export function registerResources(server: Server, deps: McpServerDeps, state: McpSessionState): () => void {
  const registry = deps.services.resources;

  server.setRequestHandler(
    'resources/list',
    (_request, ctx) =>
      ({
        resources: [
          ...registry
            .list()
            .filter(keyMayRead(deps, identityOf(ctx)))
            .map((r) => ({
              uri: r.uri,
              name: r.name,
              ...(r.title ? { title: r.title } : {}),
              ...(r.description ? { description: r.description } : {}),
              ...(r.mimeType ? { mimeType: r.mimeType } : {}),
            })),
          ...gatewayResources(deps, ctx),
        ],
      }) as never,
  );

  server.setRequestHandler(
    'resources/templates/list',
    (_request, ctx) =>
      ({
        resourceTemplates: registry
          .listTemplates()
          .filter(keyMayRead(deps, identityOf(ctx)))
          .map((t) => ({
            uriTemplate: t.uriTemplate,
            name: t.name,
            ...(t.title ? { title: t.title } : {}),
            ...(t.description ? { description: t.description } : {}),
            ...(t.mimeType ? { mimeType: t.mimeType } : {}),
          })),
      }) as never,
  );

  server.setRequestHandler(
    'resources/read',
    (request, ctx) =>
      counted(state, async () => {
        const { uri } = request.params;
        try {
          // An upstream's resource (the MCP gateway), read from the server that listed it.
          if (deps.services.gateway.active && !registry.has(uri)) {
            const upstream = await deps.services.gateway.readResource(identityOf(ctx), uri, ctx.mcpReq.signal);
            if (upstream) return upstream as never;
          }
          const use = { kind: 'resource', name: uri } as const;
          const callCtx = mcpContext(
            deps,
            state,
            server,
            ctx,
            { use, requestState: await deps.seal.claim(ctx, use) },
            request.params._meta?.progressToken as string | number | undefined,
          );
          const r = await registry.read(uri, ctx.mcpReq.signal, callCtx);
          return {
            contents: [
              r.blob ? { uri: r.uri, mimeType: r.mimeType, blob: r.content } : { uri: r.uri, mimeType: r.mimeType, text: r.content },
            ],
          } as never;
        } catch (err) {
          throw toMcpError(deps.services.logger, err, 'resources/read', uri);
        }
      }) as never,
  );

  if (deps.mode !== 'stateful') return () => undefined;

  server.setRequestHandler('resources/subscribe', (request) => {
    if (!registry.has(request.params.uri)) throw resourceNotFound(request.params.uri);
    (state.subscriptions ??= new Set()).add(request.params.uri);
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', (request) => {
    state.subscriptions?.delete(request.params.uri);
    return {};
  });

  const offUpdated = registry.onUpdated((uri) => {
    if (!state.subscriptions?.has(uri)) return;
    server.sendResourceUpdated({ uri }).catch((err: unknown) => {
      deps.services.logger.debug('resource update not delivered', { error: err instanceof Error ? err.message : String(err) });
    });
  });
  const offList = registry.onListChanged(() => {
    server.sendResourceListChanged().catch(() => undefined);
  });
  return () => {
    offUpdated();
    offList();
  };
}

/**
 * For an API key, the resources and templates its rules let it read (one served by a procedure is
 * that procedure's call: keyAccess, scopes, tools rule), as tools/list and prompts/list show a key
 * only what it may use; a read is still decided on its own.
 */
function keyMayRead(deps: McpServerDeps, identity: Identity | null): (r: { procedure?: string | undefined }) => boolean {
  if (identity?.via !== 'apiKey') return () => true;
  const index = loadedProcedureIndex(deps.services.router);
  return (r) => r.procedure === undefined || keyMayCall(r.procedure, index.get(r.procedure)?.meta, identity);
}
