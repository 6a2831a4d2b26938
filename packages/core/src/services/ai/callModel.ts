import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import { assertKeyAllowsModel, keyAllowsModel } from '../apiKeys/keyRules.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { ProviderRegistry } from './ProviderRegistry.js';
import { resolveModelName } from './routing/resolveModelName.js';
import { routeTargets, type RouteTarget } from './routing/routeTargets.js';
import type { RouteSlot } from './routing/RouteSlot.js';

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

/** What a call asked for, after the model rules: a model, or a route with the targets it may use (the first standing in for checks). */
export interface CallModel {
  provider: ProviderId;
  model: string;
  route?: { name: string; targets: RouteTarget[] };
}

/**
 * The provider and canonical model a call goes to (`model` reference, or `provider` and
 * `options.model`, or the defaults), after every model rule: syntax, allow and block lists, the
 * API key's own rules (403 before anything is held or sent). A route (`ai.routes`) gives the
 * targets the rules allow, its first in config order standing in for the checks.
 */
export function resolveCallModel(deps: ModelDeps, input: ModelChoice, identity: Identity | null): CallModel {
  const { config, providers } = deps;
  const ref = input.model === undefined ? undefined : resolveModelName(deps, input.model);
  if (ref && (input.provider !== undefined || input.options?.model !== undefined)) {
    throw new CoreError('INVALID_PARAMS', 'send either model (a provider/model reference) or provider and options.model', {
      details: { field: 'model' },
    });
  }
  if (ref?.kind === 'route') {
    const targets = routeTargets(providers, ref.name, ref.route, identity?.apiKey, 'throw');
    return { provider: targets[0]!.provider, model: targets[0]!.model, route: { name: ref.name, targets } };
  }
  const provider = providers.assertKnown(ref?.provider ?? input.provider ?? config.ai.defaultProvider);
  const model = providers.assertModelAllowed(
    provider,
    (ref?.model || undefined) ?? input.options?.model ?? providers.defaultModel(provider),
  );
  assertKeyAllowsModel(identity?.apiKey, provider, model);
  return { provider, model };
}

/** A provider and model a call may be served by. */
export interface ModelTarget {
  provider: ProviderId;
  model: string;
  /** The route (and target) it belongs to, when it is a route's. */
  route?: RouteSlot | undefined;
}

/** What the model rules of a fallback look at in a call (undefined fields: not checked, as in the previews). */
export interface ReachFilter {
  identity?: Identity | null;
  /** Attachment parts sent: a fallback must accept images. */
  attachments?: number;
  /** The call's maxTokens: a fallback must allow as many. */
  maxTokens?: number;
}

/**
 * The models a call may reach, in order: its own, the other targets of its route (`also`: the
 * retries its route planned), then each fallback (the request's, else `ai.fallbacks`; a route
 * among them gives its targets, at most its retries + 1) that the model rules allow for it:
 * allowed model, the API key's own model rules, attachments accepted, maxTokens within its limit.
 * The one list that both the worst-case price (worstCostUsd) and the targets tried (callTargets)
 * are made from, so any way a call comes to reach another model (route targets, fallbacks) is
 * priced and money-checked as the call itself is. Fallback references are assumed valid
 * (prepareCall refuses a bad one first).
 */
export function reachableModels(
  deps: ModelDeps,
  own: ModelTarget,
  fallbacks: string[] | undefined,
  f: ReachFilter = {},
  also: ModelTarget[] = [],
): ModelTarget[] {
  const { providers } = deps;
  const out: ModelTarget[] = [own];
  const consider = (t: ModelTarget) => {
    if (out.some((o) => o.provider === t.provider && o.model === t.model)) return;
    if (!providers.isModelAllowed(t.provider, t.model)) return;
    // An API key's own model rules narrow the fallbacks too (a route's targets are admitted by routeTargets).
    if (!t.route && !keyAllowsModel(f.identity?.apiKey, t.provider, t.model)) return;
    const info = providers.models.get(t.provider, t.model);
    if ((f.attachments ?? 0) > 0 && !info?.input?.includes('image')) return;
    if (f.maxTokens !== undefined && info?.maxOutputTokens !== undefined && f.maxTokens > info.maxOutputTokens) return;
    out.push(t);
  };
  for (const t of also) consider(t);
  for (const ref of fallbacks ?? deps.config.ai.fallbacks) {
    let r: ReturnType<typeof resolveModelName>;
    try {
      r = resolveModelName(deps, ref);
    } catch {
      continue; // refused in prepareCall before this runs; the previews skip it
    }
    if (r.kind === 'route') {
      for (const t of routeTargets(providers, r.name, r.route, f.identity?.apiKey, 'none').slice(0, r.route.retries + 1)) consider(t);
      continue;
    }
    consider({ provider: r.provider, model: r.model || providers.defaultModel(r.provider) });
  }
  return out;
}

/** Whether the pricing table has a price for `t` (a money limit can bound only a priced call). */
export function isPriced(deps: ModelDeps, t: ModelTarget): boolean {
  return deps.providers.models.estimateCostUsd(t.provider, t.model, 0, 0) !== undefined;
}

/**
 * The most a call can cost at the pricing table's prices: its input bound and maxTokens at the
 * dearest of the models it may reach (`reachable`, own model first; a fallback answers on the
 * same hold). Undefined when its own model has no price (a money limit then refuses the call).
 * An unpriced fallback is left out because it is never reached under a money limit: callTargets
 * skips it when the hold says one applies, and without one the price bounds nothing.
 */
export function worstCostUsd(deps: ModelDeps, reachable: ModelTarget[], inputTokens: number, maxTokens: number): number | undefined {
  const [own, ...rest] = reachable;
  const ownCost = deps.providers.models.estimateCostUsd(own!.provider, own!.model, inputTokens, maxTokens);
  if (ownCost === undefined) return undefined;
  let worst = ownCost;
  for (const t of rest) {
    const cost = deps.providers.models.estimateCostUsd(t.provider, t.model, inputTokens, maxTokens);
    if (cost !== undefined && cost > worst) worst = cost;
  }
  return worst;
}

/**
 * A route with no target available now, on a call with fallbacks: the first fallback the call
 * may reach stands for it (the route's own refusal when none is).
 */
export function firstFallback(deps: ModelDeps, fallbacks: string[] | undefined, identity: Identity | null): ModelTarget {
  const next = reachableModels(deps, { provider: '', model: '' }, fallbacks, { identity })[1];
  if (!next)
    throw new CoreError(
      'UNAVAILABLE',
      'every target of this route is cooling down or at its limit, and no fallback is allowed for this call',
      { details: { reason: 'route_unavailable' } },
    );
  return next;
}
