import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { ProviderId } from './providerIds.js';
import { namesOf, resolveModelName } from './routing/resolveModelName.js';

export interface ModelRef {
  provider: ProviderId;
  model: string;
}

/**
 * `provider/model` (e.g. `openai/gpt-4.1-mini`, `openrouter/anthropic/claude-sonnet-4.5`), an
 * alias from `ai.aliases`, or a bare model id one configured provider serves, where one
 * provider's model is wanted (resolveModelName says what a name means, routes included).
 * A bare provider name means its default model. A route is refused here.
 */
export function resolveModelRef(config: ResolvedConfig, ref: string): ModelRef {
  const r = resolveModelName(namesOf(config), ref);
  if (r.kind === 'route')
    throw new CoreError('INVALID_PARAMS', `model "${ref.slice(0, 200)}" is a route; name one provider's model here`, {
      details: { reason: 'route_not_allowed', field: 'model' },
    });
  return { provider: r.provider, model: r.model };
}
