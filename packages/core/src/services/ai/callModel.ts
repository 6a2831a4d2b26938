import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import { assertKeyAllowsModel } from '../apiKeys/keyRules.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { ProviderRegistry } from './ProviderRegistry.js';
import { resolveModelRef } from './resolveModelRef.js';

// What a call is checked and priced by before anything runs: its model and its worst case. Kept
// apart from the call engine (prepareCall and what it drives), which AiService loads on the first
// AI call, so budget previews and model checks answer without loading it.

/** What the model rules need: the config and the provider registry (a subset of CallDeps). */
type ModelDeps = { config: ResolvedConfig; providers: ProviderRegistry };
/** The fields of a call's input (TextCallInput) that name its model. */
type ModelChoice = { model?: string; provider?: ProviderId; options?: { model?: string } };

/**
 * Tokens a provider adds around the messages (role markers, turn separators, reply priming):
 * a few per message on every provider we support; 64 per call plus 16 per message leaves a wide margin.
 */
export const MESSAGE_OVERHEAD_TOKENS = 64;
export const PER_MESSAGE_OVERHEAD_TOKENS = 16;

/**
 * Tokens a provider adds when tools are offered (or structured output goes through a forced
 * tool): a tool-use system prompt of its own that no text of the request accounts for.
 * Anthropic publishes it per model, at most 530 tokens (Claude 3 Opus; 346 for Claude 4.x);
 * OpenAI and Google add less. Twice the largest leaves a margin.
 */
export const TOOL_USE_OVERHEAD_TOKENS = 1024;

/** UTF-8 bytes of a text: an upper bound of its tokens under any byte-level tokenizer. */
export const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * Worst-case tokens of a call, a true upper bound so a hold always covers the charge: every
 * token of a byte-level tokenizer encodes at least one byte, so input tokens cannot exceed the
 * UTF-8 bytes of system prompt and content plus the message overhead; output cannot exceed maxTokens.
 */
export function estimateTokens(content: string, system: string, maxTokens: number): number {
  return utf8(content) + utf8(system) + MESSAGE_OVERHEAD_TOKENS + maxTokens;
}

/**
 * The provider and canonical model a call goes to (`model` reference, or `provider` and
 * `options.model`, or the defaults), after every model rule: syntax, allow and block lists, the
 * API key's own rules (403 before anything is held or sent).
 */
export function resolveCallModel(deps: ModelDeps, input: ModelChoice, identity: Identity | null): { provider: ProviderId; model: string } {
  const { config, providers } = deps;
  const ref = input.model === undefined ? undefined : resolveModelRef(config, input.model);
  if (ref && (input.provider !== undefined || input.options?.model !== undefined)) {
    throw new CoreError('INVALID_PARAMS', 'send either model (a provider/model reference) or provider and options.model', { details: { field: 'model' } });
  }
  const provider = providers.assertKnown(ref?.provider ?? input.provider ?? config.ai.defaultProvider);
  const model = providers.assertModelAllowed(provider, (ref?.model || undefined) ?? input.options?.model ?? providers.defaultModel(provider));
  assertKeyAllowsModel(identity?.apiKey, provider, model);
  return { provider, model };
}

/**
 * The most a call can cost at the pricing table's prices: its input bound and maxTokens at the
 * dearest of its model and the fallbacks it may move to (a fallback answers on the same hold).
 * Undefined when its own model has no price; an unpriced fallback is left out.
 */
export function worstCostUsd(
  deps: ModelDeps,
  fallbacks: string[] | undefined,
  provider: ProviderId,
  model: string,
  inputTokens: number,
  maxTokens: number,
): number | undefined {
  const own = deps.providers.models.estimateCostUsd(provider, model, inputTokens, maxTokens);
  if (own === undefined) return undefined;
  let worst = own;
  for (const ref of fallbacks ?? deps.config.ai.fallbacks) {
    let cost: number | undefined;
    try {
      const r = resolveModelRef(deps.config, ref);
      cost = deps.providers.models.estimateCostUsd(r.provider, r.model || deps.providers.defaultModel(r.provider), inputTokens, maxTokens);
    } catch {
      continue; // refused in prepareCall before this runs
    }
    if (cost !== undefined && cost > worst) worst = cost;
  }
  return worst;
}
