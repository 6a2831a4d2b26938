import type { ResolvedConfig } from '../../../config/schema.js';
import type { RouteConfig } from '../../../config/sections/aiRoutes.js';
import { isBuiltinProvider, splitModelRef } from '../../../config/sections/aiProviders.js';
import { CoreError } from '../../../kernel/CoreError.js';
import type { ApiKeyGrant } from '../../../kernel/identity.js';
import type { ProviderId } from '../providerIds.js';
import { ProviderRegistry } from '../ProviderRegistry.js';
import { routeTargets } from './routeTargets.js';

/** What a model name means: one provider's model, or a route over several. */
export type ModelName = { kind: 'model'; provider: ProviderId; model: string } | { kind: 'route'; name: string; route: RouteConfig };

/** What resolving a name needs: the config and its providers (their model lists and registry). */
export interface NameDeps {
  config: ResolvedConfig;
  providers: ProviderRegistry;
}

export interface NameOptions {
  /**
   * The provider of a bare id that no configured provider lists (on /v1/messages, `claude-…` is
   * Anthropic's, so Claude Code works unchanged with ids newer than the bundled registry).
   */
  bareProvider?: ProviderId;
}

/** Bare model id → the providers that serve it, per provider registry (built once, on the first bare name). */
const servedBy = new WeakMap<ProviderRegistry, Map<string, ProviderId[]>>();

function bareIndex(providers: ProviderRegistry): Map<string, ProviderId[]> {
  let index = servedBy.get(providers);
  if (index) return index;
  index = new Map();
  for (const id of providers.ids()) {
    // Configured: the server pays for it, or callers may bring their own key for it.
    if (providers.serverKey(id) === undefined && !providers.isByokProvider(id)) continue;
    const ids = new Set([...providers.models.models(id).map((m) => m.id), ...providers.allowedModels(id)]);
    for (const m of ids) {
      if (!providers.isModelAllowed(id, m)) continue;
      const list = index.get(m) ?? [];
      list.push(id);
      index.set(m, list);
    }
  }
  servedBy.set(providers, index);
  return index;
}

/** Providers of config-only callers (the /v1 request parsers), one per config. */
const registries = new WeakMap<ResolvedConfig, ProviderRegistry>();
export function namesOf(config: ResolvedConfig): NameDeps {
  let providers = registries.get(config);
  if (!providers) registries.set(config, (providers = new ProviderRegistry(config)));
  return { config, providers };
}

function unknownModel(deps: NameDeps, ref: string): CoreError {
  const ids = deps.providers.ids();
  return new CoreError(
    'INVALID_PARAMS',
    `model "${ref.slice(0, 200)}" must be provider/model (providers: ${ids.join(', ')}), a configured alias or route, or a model id that one configured provider serves`,
    {
      details: { reason: 'unknown_model' },
    },
  );
}

/**
 * What a model name refers to. Precedence (docs/ai.md#model-names): a route of `ai.routes` >
 * an alias of `ai.aliases` (which may name a route) > `provider/model` or a bare provider (its
 * default model) > a bare model id that exactly one configured provider serves (built-in or
 * named; by its model list or the registry). A bare id several providers serve is refused
 * naming each as `provider/model`.
 */
export function resolveModelName(deps: NameDeps, ref: string, opts: NameOptions = {}): ModelName {
  const { config } = deps;
  const { routes, aliases } = config.ai;
  if (Object.hasOwn(routes, ref)) return { kind: 'route', name: ref, route: routes[ref]! };
  const aliased = Object.hasOwn(aliases, ref);
  const target = aliased ? aliases[ref]! : ref;
  if (aliased && Object.hasOwn(routes, target)) return { kind: 'route', name: target, route: routes[target]! };
  const parts = splitModelRef(target);
  if (isBuiltinProvider(parts.provider) || Object.hasOwn(config.ai.providers, parts.provider))
    return { kind: 'model', provider: parts.provider, model: parts.model };
  if (aliased) throw unknownModel(deps, ref);
  const candidates = bareIndex(deps.providers).get(ref) ?? [];
  if (candidates.length === 1) return { kind: 'model', provider: candidates[0]!, model: ref };
  if (candidates.length > 1) {
    const listed = candidates.map((p) => `${p}/${ref}`);
    throw new CoreError(
      'INVALID_PARAMS',
      `model "${ref.slice(0, 200)}" is served by several providers: ${listed.join(', ')}; name one as provider/model`,
      {
        details: { reason: 'ambiguous_model', candidates: listed },
      },
    );
  }
  if (opts.bareProvider !== undefined && !ref.includes('/')) return { kind: 'model', provider: opts.bareProvider, model: ref };
  throw unknownModel(deps, ref);
}

/**
 * The input fields of ai.generateText / ai.streamText for a `/v1` request's `model`: a built-in
 * provider's model as `provider` + `options.model` (the spec's procedures), anything else as a
 * `model` reference the procedure resolves (named providers, routes).
 */
export function modelInputFields(
  config: ResolvedConfig,
  ref: string,
  opts: NameOptions = {},
): { input: Record<string, unknown>; options: Record<string, unknown> } {
  const r = resolveModelName(namesOf(config), ref, opts);
  if (r.kind === 'route') return { input: { model: r.name }, options: {} };
  if (isBuiltinProvider(r.provider)) return { input: { provider: r.provider }, options: r.model ? { model: r.model } : {} };
  return { input: { model: r.model ? `${r.provider}/${r.model}` : r.provider }, options: {} };
}

/**
 * The routes a caller may use, by name (GET /v1/models): those with a target the server allows
 * and the caller's API key admits (routeTargets), so a key is never shown a route every call of
 * which it would be refused (403 key_model_not_allowed).
 */
export function usableRoutes(config: ResolvedConfig, grant: ApiKeyGrant | undefined): string[] {
  const { providers } = namesOf(config);
  return Object.entries(config.ai.routes)
    .filter(([name, route]) => routeTargets(providers, name, route, grant, 'none').length > 0)
    .map(([name]) => name);
}
