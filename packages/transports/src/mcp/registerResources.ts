import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { mcpContext } from './callContext.js';
import { toMcpError } from './mcpErrors.js';
import type { McpServerDeps, McpSessionState } from './sessionState.js';

/** MCP's "resource not found" error code. */
const RESOURCE_NOT_FOUND = -32002;

/**
 * resources/list, resources/read, resources/templates/list and, in stateful mode,
 * resources/subscribe + unsubscribe: the registry's notifyUpdated (called by operators, custom
 * code or workspace watching) reaches subscribed sessions as notifications/resources/updated.
 * Returns a cleanup for when the session ends.
 */
export function registerResources(server: Server, deps: McpServerDeps, state: McpSessionState): () => void {
  const registry = deps.runtime.resources;

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: registry.list().map((r) => ({
      uri: r.uri,
      name: r.name,
      ...(r.title ? { title: r.title } : {}),
      ...(r.description ? { description: r.description } : {}),
      ...(r.mimeType ? { mimeType: r.mimeType } : {}),
    })),
  }));

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: registry.listTemplates().map((t) => ({
      uriTemplate: t.uriTemplate,
      name: t.name,
      ...(t.title ? { title: t.title } : {}),
      ...(t.description ? { description: t.description } : {}),
      ...(t.mimeType ? { mimeType: t.mimeType } : {}),
    })),
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { uri } = request.params;
    try {
      const ctx = mcpContext(deps, state, server, extra, uri, request.params._meta?.progressToken);
      const r = await registry.read(uri, extra.signal, ctx);
      return { contents: [r.blob ? { uri: r.uri, mimeType: r.mimeType, blob: r.content } : { uri: r.uri, mimeType: r.mimeType, text: r.content }] };
    } catch (err) {
      throw toMcpError(deps.runtime, err, 'resources/read');
    }
  });

  if (deps.mode === 'stateless') return () => undefined;

  const subscriptions = new Set<string>();
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    if (!registry.has(request.params.uri)) throw new McpError(RESOURCE_NOT_FOUND, 'resource not found', { uri: request.params.uri.slice(0, 2048) });
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  const offUpdated = registry.onUpdated((uri) => {
    if (!subscriptions.has(uri)) return;
    server.sendResourceUpdated({ uri }).catch((err: unknown) => {
      deps.runtime.logger.debug('resource update not delivered', { error: err instanceof Error ? err.message : String(err) });
    });
  });
  const offList = registry.onListChanged(() => {
    server.sendResourceListChanged().catch(() => undefined);
  });
  return () => {
    offUpdated();
    offList();
    subscriptions.clear();
  };
}
