import type { Server, ServerContext } from '@modelcontextprotocol/server';
import type { AnyRouter } from '@trpc/server';
import {
  assertReadable,
  CoreError,
  keyResourceRefusal,
  recordKeyRefusal,
  type SecurityLog,
  readResourceAs,
  resourceReader,
  type Identity,
  type ResourceRegistry,
  type ResourceTarget,
} from '@ai-backend/core/internal';
import { mcpContext } from './callContext.js';
import { resourceNotFound, toMcpError } from './mcpErrors.js';
import { counted, type McpServerDeps, type McpSessionState } from './sessionState.js';
import { gatewayResources, gatewayResourceTemplates, identityOf } from './gatewayTools.js';
import { recordRefusal, requestIpOf } from './recordRefusal.js';

/** How many upstream resources one session may be subscribed to at once (docs/mcp-gateway.md). */
export const MAX_UPSTREAM_SUBSCRIPTIONS = 100;

/** What resources/list and resources/templates/list show of an item besides its address: the optional fields only where set. */
function listedFields(item: { name: string; title?: string | undefined; description?: string | undefined; mimeType?: string | undefined }) {
  return {
    name: item.name,
    ...(item.title ? { title: item.title } : {}),
    ...(item.description ? { description: item.description } : {}),
    ...(item.mimeType ? { mimeType: item.mimeType } : {}),
  };
}

/**
 * resources/list, resources/read, resources/templates/list and, for 2025 sessions,
 * resources/subscribe + unsubscribe: the registry's notifyUpdated (called by operators, custom
 * code or workspace watching) reaches subscribed sessions as notifications/resources/updated, and
 * so does an upstream's (the MCP gateway subscribes at the upstream while a session is subscribed).
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
            .map((r) => ({ uri: r.uri, ...listedFields(r) })),
          ...gatewayResources(deps, ctx),
        ],
      }) as never,
  );

  server.setRequestHandler(
    'resources/templates/list',
    (_request, ctx) =>
      ({
        resourceTemplates: [
          ...registry
            .listTemplates()
            .filter(keyMayRead(deps, identityOf(ctx)))
            .map((t) => ({ uriTemplate: t.uriTemplate, ...listedFields(t) })),
          ...gatewayResourceTemplates(deps, ctx),
        ],
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
            const upstream = await deps.services.gateway.content.readResource(identityOf(ctx), uri, ctx.mcpReq.signal);
            if (upstream) return upstream as never;
            // One its API key may not read is answered as unknown below; the refusal is recorded (unless one
            // of ours serves the URI: then ours decides, and records its own).
            if (!registry.targetOf(uri)) recordRefusal(deps, ctx, upstreamRefusal(deps, ctx, uri), uri);
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
          const r = await readResourceAs(deps.services, callCtx, uri, ctx.mcpReq.signal);
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

  // This session as a subscriber to upstream resources (the MCP gateway): their updates reach it only.
  const gateway = deps.services.gateway;
  const upstreamUpdated = (uri: string) => {
    server.sendResourceUpdated({ uri }).catch((err: unknown) => {
      deps.services.logger.debug('resource update not delivered', { error: err instanceof Error ? err.message : String(err) });
    });
  };

  // The upstream resources this session subscribed to; `ended` once it closed (a subscribe still running then is undone).
  const upstreamUris = new Set<string>();
  let ended = false;

  server.setRequestHandler('resources/subscribe', async (request, ctx) => {
    const { uri } = request.params;
    if (registry.has(uri)) {
      // A resource this API key may not read is as unknown here as in resources/list: a subscription
      // would tell the key each time it changes.
      try {
        assertReadable(deps.services, identityOf(ctx), uri, { transport: 'mcp', ip: requestIpOf(ctx) });
      } catch {
        throw resourceNotFound(uri);
      }
    } else if (!upstreamUris.has(uri)) {
      // An upstream's resource: subscribed at the server that serves it (as resources/read reads it there).
      let upstream = false;
      try {
        // Templates match endless URIs: each subscription holds state here and at the upstream, so a session has a bound.
        if (upstreamUris.size >= MAX_UPSTREAM_SUBSCRIPTIONS)
          throw new CoreError(
            'BAD_REQUEST',
            `a session may subscribe to at most ${MAX_UPSTREAM_SUBSCRIPTIONS} upstream resources; unsubscribe from some first`,
          );
        upstream = gateway.active && (await gateway.content.subscribe(identityOf(ctx), uri, upstreamUpdated));
      } catch (err) {
        throw toMcpError(deps.services.logger, err, 'resources/subscribe', uri);
      }
      if (!upstream) {
        recordRefusal(deps, ctx, upstreamRefusal(deps, ctx, uri), uri);
        throw resourceNotFound(uri);
      }
      if (ended) {
        gateway.content.unsubscribe(uri, upstreamUpdated);
        return {};
      }
      upstreamUris.add(uri);
    }
    (state.subscriptions ??= new Set()).add(uri);
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', (request) => {
    state.subscriptions?.delete(request.params.uri);
    if (upstreamUris.delete(request.params.uri)) gateway.content.unsubscribe(request.params.uri, upstreamUpdated);
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
    // The session ended: an upstream subscription it was the last subscriber of ends too.
    ended = true;
    if (gateway.active) gateway.content.unsubscribeAll(upstreamUpdated);
  };
}

/** Why the caller's API key may not use an upstream resource (or template) `uri` that exists, if it is so. */
function upstreamRefusal(deps: McpServerDeps, ctx: ServerContext, uri: string): CoreError | undefined {
  return deps.services.gateway.active
    ? deps.services.gateway.content.keyRefusal(identityOf(ctx), { type: 'ref/resource', uri })
    : undefined;
}

/**
 * The resources and templates this caller may read (core's resourceReader: for an API key, what
 * its rules admit, whatever serves them), as tools/list and prompts/list show a key only what it
 * may use. resources/read, resources/subscribe and completion/complete answer the others as unknown.
 */
export function keyMayRead(deps: McpServerDeps, identity: Identity | null): (r: ResourceTarget) => boolean {
  return resourceReader(deps.services.router, identity);
}

/**
 * A 2026-07-28 subscriptions/listen naming a resource this API key may not read: answered as an
 * unknown resource (-32602), as resources/subscribe of a 2025 session and resources/list treat it,
 * instead of a stream that would tell the key each time the resource changes; the refusal is
 * recorded in the security log (`key_refused`, the URI as its path). Undefined otherwise.
 */
export function unreadableSubscription(
  services: { resources: ResourceRegistry; security: Pick<SecurityLog, 'record'> },
  router: AnyRouter,
  scope: { identity: Identity | null; ip: string | undefined },
  messages: unknown[],
): Response | undefined {
  const { resources } = services;
  const { identity } = scope;
  if (identity?.via !== 'apiKey') return undefined;
  for (const m of messages) {
    const msg = m as { id?: unknown; method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } } | null;
    const uris = msg?.method === 'subscriptions/listen' ? msg.params?.notifications?.resourceSubscriptions : undefined;
    if (!Array.isArray(uris)) continue;
    for (const uri of uris) {
      const target = typeof uri === 'string' ? resources.targetOf(uri) : undefined;
      if (target === undefined || resourceReader(router, identity)({ uri: uri as string, ...target })) continue;
      recordKeyRefusal(services.security, identity, keyResourceRefusal(), { transport: 'mcp', ip: scope.ip, path: uri as string });
      const id = typeof msg!.id === 'string' || typeof msg!.id === 'number' ? msg!.id : null;
      const error = { code: -32602, message: 'resource not found', data: { uri: (uri as string).slice(0, 2048) } };
      return new Response(JSON.stringify({ jsonrpc: '2.0', id, error }), { status: 200, headers: { 'content-type': 'application/json' } });
    }
  }
  return undefined;
}
