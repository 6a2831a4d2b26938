import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import { isBuiltinProvider } from '../../config/sections/aiProviders.js';
import { PROVIDER_ALIASES, PROVIDER_IDS, type ProviderId } from './providerIds.js';

export interface ModelRef {
  provider: ProviderId;
  model: string;
}

/**
 * `provider/model` (e.g. `openai/gpt-4.1-mini`, `openrouter/anthropic/claude-sonnet-4.5`) or an
 * alias from `ai.aliases`, as the OpenAI-compatible endpoint's `model` field names it.
 * A bare provider name means its default model.
 */
export function resolveModelRef(config: ResolvedConfig, ref: string): ModelRef {
  const target = Object.hasOwn(config.ai.aliases, ref) ? config.ai.aliases[ref]! : ref;
  const slash = target.indexOf('/');
  const head = slash < 0 ? target : target.slice(0, slash);
  const provider = (Object.hasOwn(PROVIDER_ALIASES, head) ? PROVIDER_ALIASES[head] : head) as ProviderId;
  if (!isBuiltinProvider(provider) && !Object.hasOwn(config.ai.providers, provider)) {
    const ids = [...PROVIDER_IDS, ...Object.keys(config.ai.providers).filter((id) => !isBuiltinProvider(id))];
    throw new CoreError('INVALID_PARAMS', `model "${ref.slice(0, 200)}" must be provider/model (providers: ${ids.join(', ')}) or a configured alias`, {
      details: { reason: 'unknown_model' },
    });
  }
  const model = slash < 0 ? '' : target.slice(slash + 1);
  return { provider, model };
}
