import type { RouteConfig } from '../../../config/sections/aiRoutes.js';
import { splitModelRef } from '../../../config/sections/aiProviders.js';
import { CoreError } from '../../../kernel/CoreError.js';
import type { ApiKeyGrant } from '../../../kernel/identity.js';
import { keyAllowsRouteTarget } from '../../apiKeys/keyRules.js';
import type { ProviderRegistry } from '../ProviderRegistry.js';
import type { RouteSlot } from './RouteSlot.js';

/** A route target a call may use, with its place in the route. */
export interface RouteTarget {
  provider: string;
  model: string;
  route: RouteSlot;
}

/**
 * The targets of route `name` a call may use, in config order: models the server allows, and
 * the caller's API key admits (the target itself, or the route by name: keyAllowsRouteTarget).
 * None: FORBIDDEN, as for a model asked for directly (`onNone: 'throw'`), or [] (a fallback).
 */
export function routeTargets(
  providers: ProviderRegistry,
  name: string,
  route: RouteConfig,
  grant: ApiKeyGrant | undefined,
  onNone: 'throw' | 'none',
): RouteTarget[] {
  const out: RouteTarget[] = [];
  let keyRefused = false;
  route.targets.forEach((t, index) => {
    const { provider, model } = splitModelRef(t.model);
    if (!providers.has(provider) || !providers.isModelAllowed(provider, model)) return;
    if (!keyAllowsRouteTarget(grant, name, provider, model)) {
      keyRefused = true;
      return;
    }
    out.push({ provider, model, route: { name, index } });
  });
  if (out.length === 0 && onNone === 'throw') {
    if (keyRefused)
      throw new CoreError('FORBIDDEN', `this API key may not use model ${name}`, {
        details: { reason: 'key_model_not_allowed', model: name },
      });
    throw new CoreError('FORBIDDEN', `no target of route ${name} is allowed by the server's model restrictions`, {
      details: { reason: 'model_not_allowed', model: name },
    });
  }
  return out;
}
