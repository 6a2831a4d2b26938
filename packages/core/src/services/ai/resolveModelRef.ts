import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import { isBuiltinProvider, splitModelRef } from '../../config/sections/aiProviders.js';
import { PROVIDER_IDS, type ProviderId } from './providerIds.js';

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
  const parts = splitModelRef(target);
  const provider = parts.provider as ProviderId;
  if (!isBuiltinProvider(provider) && !Object.hasOwn(config.ai.providers, provider)) {
    const ids = [...PROVIDER_IDS, ...Object.keys(config.ai.providers).filter((id) => !isBuiltinProvider(id))];
    throw new CoreError('INVALID_PARAMS', `model "${ref.slice(0, 200)}" must be provider/model (providers: ${ids.join(', ')}) or a configured alias`, {
      details: { reason: 'unknown_model' },
    });
  }
  return { provider, model: parts.model };
}
