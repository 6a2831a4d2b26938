import type { Context as HonoContext, Handler } from 'hono';
import { CoreError, invoke, usableRoutes, type EntryGateway } from '@ai-backend/core/internal';
import { withCorsHeaders } from '../edge/cors.js';
import { serveEntry } from '../edge/serveEntry.js';
import { sharedRouteError, wantsAnthropic } from './sharedRouteError.js';

type ModelEntry = { id: string; object: 'model'; created: number; owned_by: string };

/**
 * The models the caller may use: `provider/model` ids the server allows, plus the configured aliases and routes (through the entry
 * sequence).
 */
function serveModels(c: HonoContext, gateway: EntryGateway, answer: (data: ModelEntry[]) => Response): Promise<Response> {
  return serveEntry(c, gateway, {
    transport: 'openai',
    refusals: 'http',
    toolCalls: 'before-dispatch',
    readCalls: async () => ({ calls: [{ kind: 'procedure', path: 'ai.listAllowedModels' }], parsed: undefined }),
    refuse: (c, _scope, error, _status, headers) => sharedRouteError(c, error, gateway, headers),
    async run(c, scope) {
      const ctx = scope.context();
      const result = await invoke(gateway.router, 'ai.listAllowedModels', undefined, ctx);
      if (!result.ok) return sharedRouteError(c, result.error, gateway);
      const created = Math.floor(Date.now() / 1000);
      const byProvider = (result.data as { models: Record<string, string[]> }).models;
      const data = Object.entries(byProvider).flatMap(([provider, models]) =>
        models.map((m): ModelEntry => ({ id: `${provider}/${m}`, object: 'model', created, owned_by: provider })),
      );
      for (const [alias, target] of Object.entries(gateway.config.ai.aliases))
        data.push({ id: alias, object: 'model', created, owned_by: target.includes('/') ? target.split('/')[0]! : 'route' });
      // Only the routes this caller may use, as the provider/model ids above (an API key's rules).
      for (const name of usableRoutes(gateway.config, ctx.identity?.apiKey))
        data.push({ id: name, object: 'model', created, owned_by: 'route' });
      return answer(data);
    },
  });
}

const json = (c: HonoContext, body: unknown) =>
  new Response(JSON.stringify(body), { status: 200, headers: withCorsHeaders(c, { 'content-type': 'application/json' }) });

const anthropicModel = (m: ModelEntry) => ({
  type: 'model',
  id: m.id,
  display_name: m.id,
  created_at: new Date(m.created * 1000).toISOString(),
});

/**
 * GET /v1/models: `provider/model` ids the server allows, plus the configured aliases; in
 * Anthropic's shape (`data`, `has_more`, `first_id`, `last_id`) for Anthropic clients.
 */
export function modelsHandler(getGateway: () => Promise<EntryGateway>): Handler {
  return async (c) =>
    serveModels(c, await getGateway(), (data) => {
      if (wantsAnthropic(c))
        return json(c, {
          data: data.map(anthropicModel),
          has_more: false,
          first_id: data[0]?.id ?? null,
          last_id: data.at(-1)?.id ?? null,
        });
      return json(c, { object: 'list', data });
    });
}

/** A path segment percent-decoded; malformed escapes (`%ZZ`, a cut UTF-8 sequence) kept as sent, which names no model. */
function decodedId(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * GET /v1/models/{id} (the `openai` client's `models.retrieve`): one entry of the list; the id
 * keeps its slashes (`openai/gpt-4.1-mini`, `openrouter/openai/gpt-5-mini`).
 */
export function modelHandler(getGateway: () => Promise<EntryGateway>): Handler {
  return async (c) =>
    serveModels(c, await getGateway(), (data) => {
      const id = decodedId(c.req.path.slice('/v1/models/'.length));
      const entry = data.find((m) => m.id === id);
      if (entry) return json(c, wantsAnthropic(c) ? anthropicModel(entry) : entry);
      return sharedRouteError(
        c,
        new CoreError('NOT_FOUND', `the model '${id.slice(0, 300)}' does not exist or is not allowed`, { details: { param: 'model' } }),
      );
    });
}
