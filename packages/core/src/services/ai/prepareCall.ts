import { requestIdV7 } from '../../lib/requestIdV7.js';
import type { ToolSet } from 'ai';
import type { ProviderId } from '../../config/sections/ai.js';
import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Metrics } from '../../observability/Metrics.js';
import type { Identity } from '../../kernel/identity.js';
import { loadAiSdk } from './aiSdk.js';
import { ATTACHMENT_TOKENS, buildPrompt, promptBytes, type BuiltPrompt } from './buildPrompt.js';
import type { CircuitBreaker } from './CircuitBreaker.js';
import type { ChatMessage, OutputSpec, ToolChoice, ToolDefinition } from './chatInput.js';
import type { Hold, Metering, UsageMetadata } from '../metering/Metering.js';
import type { ProviderRegistry } from './ProviderRegistry.js';
import { resolveModelName } from './routing/resolveModelName.js';
import type { Routing } from './routing/Routing.js';
import { planForStoredKey, planRoute, platformRefused, storedKeyPaysOrRefuse, type RoutePlan } from './routing/planRoute.js';
import type { RouteTarget } from './routing/routeTargets.js';
import type { CacheDirective, ResponseCache } from './cache/ResponseCache.js';
import type { WireRequest } from './passThrough/wireRequest.js';
import { asksProviderCache, wireInputBound } from './wireInputBound.js';
import { isStrictSchema, objectRoot } from './validateOutput.js';
import { assertPromptMayUse, type SystemPromptStore } from './SystemPromptStore.js';
import {
  MESSAGE_OVERHEAD_TOKENS,
  TOOL_USE_OVERHEAD_TOKENS,
  reachableModels,
  resolveCallModel,
  utf8,
  worstCostUsd,
  firstFallback,
  type CallModel,
  type ModelTarget,
} from './callModel.js';

/** ai.generateText / ai.streamText input (provider already un-aliased). */
export interface TextCallInput {
  /** The spec's single user message; or `messages`. */
  content?: string;
  /** Inline text, or `@name` of a server-side prompt. */
  systemPrompt?: string;
  messages?: ChatMessage[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  output?: OutputSpec;
  /** Targets tried in order after a retryable failure: `provider/model` or an alias. */
  fallbacks?: string[];
  provider?: ProviderId;
  /**
   * A model reference instead of `provider` (+ `options.model`): `provider/model`, a bare
   * provider (its default model) or an alias, as in `fallbacks`. The way to name a named provider
   * on the spec's procedures, whose `provider` stays the spec's enum of four.
   */
  model?: string;
  apiKey?: string;
  metadata?: UsageMetadata;
  options?: { model?: string; maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[]; seed?: number };
  /** The response cache for this call (`ai.cache`): `on`, `off`, or `refresh` (no lookup, the answer stored). */
  cache?: CacheDirective;
}

/** Who calls and how to stop: filled from the tRPC context. */
export interface TextCall {
  identity: Identity | null;
  /** Aborted when the client disconnects; aborts the upstream call. */
  signal: AbortSignal;
  ip?: string;
  /** The vendor wire request this call was translated from (/v1 only): what the pass-through path forwards (attemptPath). */
  wire?: WireRequest;
}

export interface CallDeps {
  config: ResolvedConfig;
  logger: Logger;
  providers: ProviderRegistry;
  prompts: SystemPromptStore;
  metering: Metering;
  /** Per-provider outcome counters for the registry health report. */
  record(provider: ProviderId, ok: boolean, ms: number, reason?: string): void;
  /** Shared per-provider breaker for calls with fallbacks (absent: no breaker). */
  breaker?: CircuitBreaker;
  /** Counts calls that left a target for a fallback (absent when metrics are off). */
  metrics?: Metrics;
  /** A signed-in caller's stored key (BYOK vault), for BYOK fallbacks to other providers. */
  storedKey?: (userId: string, provider: ProviderId) => Promise<string | undefined>;
  /** Routes (ai.routes) at call time: target order, cooldowns, rpm/tpm; absent without routes. */
  routing?: Routing;
  /** The response cache (ai.cache); absent when it is off. */
  cache?: ResponseCache;
}

/** A call that passed every check, with its payer decided and (platform-paid) its tokens held. */
export interface PreparedCall {
  requestId: string;
  provider: ProviderId;
  model: string;
  mode: 'byok' | 'platform';
  apiKey: string;
  maxTokens: number;
  /** Upper bound of input tokens (UTF-8 bytes of all text plus overhead, ATTACHMENT_TOKENS per part). */
  inputEstimate: number;
  /** The hold: inputEstimate + maxTokens. */
  estimatedTokens: number;
  /**
   * The input the cost bound prices: inputEstimate, twice over for a body that asks the provider to
   * cache its prompt (asksProviderCache: a cache write is billed at up to twice the input price).
   */
  costInput: number;
  prompt: BuiltPrompt;
  /** Billing's hold: closed once, by the accounting step (settle) or on failure (release). */
  hold: Hold;
  /** The models this call may reach, its own first (reachableModels): what its worst case was priced over. */
  reachable: ModelTarget[];
  /** The route (and target) `provider`/`model` belongs to, when it is a route's. */
  route?: ModelTarget['route'];
  /**
   * Paid with the caller's stored key for `provider`, read when the call reaches it (callTargets): a route planned again for a stored key.
   */
  storedKey?: true;
}

/**
 * Everything before the upstream call, shared by generateText and streamText: limits, model
 * rules, system prompts, chat messages, who pays, and the reservation of platform tokens.
 */
export async function prepareCall(deps: CallDeps, input: TextCallInput, call: TextCall): Promise<PreparedCall> {
  const choice = resolveCallModel(deps, input, call.identity);
  const fallbacks = (input.fallbacks ?? deps.config.ai.fallbacks).length > 0;
  // A route: the order its strategy gives this call (cooling and full targets left out), its
  // first standing for the call; with fallbacks, a route with nothing available gives way to them.
  // A call with its own key in the request is planned past the deployments' capacity (KeyedBy);
  // one the route refuses may still be, when its caller's stored key would pay (planRoute).
  const plan: RoutePlan<RouteTarget> =
    choice.route && deps.routing
      ? await planRoute(deps.routing, choice.route.name, choice.route.targets, {
          ownKey: input.apiKey !== undefined,
          fallbacks,
          identity: call.identity,
          metering: deps.metering,
          byok: (p) => deps.providers.isByokProvider(p),
        })
      : { planned: [] };
  try {
    return await prepareWith(deps, input, call, choice, plan);
  } catch (err) {
    // The route refused the platform and the caller's stored key does not pay after all (the
    // question, or the hold, said so; nothing is held): the fallbacks serve, as they would have.
    if (!fallbacks || !plan.refused || err !== plan.refused) throw err;
    deps.routing?.unplan(plan.planned[0]!);
    return prepareWith(deps, input, call, choice, { planned: [] });
  }
}

/** prepareCall with the route's plan made (`planned` empty: no route, or its fallbacks stand for it). */
async function prepareWith(
  deps: CallDeps,
  input: TextCallInput,
  call: TextCall,
  choice: CallModel,
  { planned, refused }: RoutePlan<RouteTarget>,
): Promise<PreparedCall> {
  const { config, providers, metering } = deps;
  const ai = config.ai;
  const maxTokens = input.options?.maxTokens ?? ai.defaultMaxTokens;
  const own =
    planned[0] ?? (choice.route ? firstFallback(deps, input.fallbacks, call.identity) : { provider: choice.provider, model: choice.model });
  const { provider } = own;
  if (maxTokens > ai.maxTokensLimit)
    throw new CoreError('INVALID_PARAMS', `maxTokens may be at most ${ai.maxTokensLimit}`, { details: { field: 'options.maxTokens' } });
  const modelMax = providers.models.get(provider, own.model)?.maxOutputTokens;
  if (modelMax !== undefined && maxTokens > modelMax)
    throw new CoreError('INVALID_PARAMS', `maxTokens may be at most ${modelMax} for ${own.model}`, {
      details: { field: 'options.maxTokens' },
    });
  const prompt = buildPrompt(input, { provider, model: own.model, registry: providers.models, prompts: deps.prompts, ai });
  // A bad fallback reference is refused here, before the payer decision and the hold: the
  // targets are built after the reservation, and failing there would leave it held.
  for (const ref of input.fallbacks ?? ai.fallbacks) resolveModelName(deps, ref);
  if (call.signal.aborted) throw new CoreError('CANCELLED', 'the request was cancelled by the client');

  const requestId = requestIdV7();
  // Tool definitions and the output schema are sent as input too.
  // An upper bound, not a guess (so no call is ever charged less than an identical call): UTF-8
  // bytes of every text sent, tool definitions and the output schema included, plus overhead.
  const extraBytes = (input.tools ? utf8(JSON.stringify(input.tools)) : 0) + (input.output ? utf8(JSON.stringify(input.output.schema)) : 0);
  const toolUse = input.tools?.length || input.output ? TOOL_USE_OVERHEAD_TOKENS : 0;
  const translated = promptBytes(prompt) + extraBytes + toolUse + MESSAGE_OVERHEAD_TOKENS + prompt.attachments * ATTACHMENT_TOKENS;
  // A /v1 call's body may be forwarded as sent (the pass-through path): the hold covers all of it.
  const inputEstimate = call.wire ? Math.max(translated, wireInputBound(call.wire, ai)) : translated;
  const estimatedTokens = inputEstimate + maxTokens;
  const reach = { identity: call.identity, attachments: prompt.attachments, maxTokens };
  let reachable = reachableModels(deps, own, input.fallbacks, reach, planned.slice(1));
  const costInput = call.wire && asksProviderCache(call.wire) ? 2 * inputEstimate : inputEstimate;
  const costUsd = worstCostUsd(deps, reachable, costInput, maxTokens);
  // A signed-in caller's stored key may pay for another provider of the route when none pays for
  // this one (a route that refused the platform: of the targets its caller-keyed plan gave).
  const others =
    choice.route && planned.length > 0 && input.apiKey === undefined && deps.storedKey ? (refused ? planned : choice.route.targets) : [];
  const alsoByok = [...new Set(others.map((t) => t.provider))].filter((p) => p !== provider && providers.isByokProvider(p));
  const keyed = providers.isByokProvider(provider) ? [provider, ...alsoByok] : alsoByok;
  await storedKeyPaysOrRefuse(metering, refused, { identity: call.identity, providers: keyed, estimatedTokens });
  // One entry into billing before the call: who pays (and, for the platform, the reservation).
  const hold = await metering.hold({
    identity: call.identity,
    ...(call.ip ? { ip: call.ip } : {}),
    requestId,
    provider,
    estimatedTokens,
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(input.apiKey !== undefined ? { ownKey: input.apiKey } : {}),
    byokAllowed: providers.isByokProvider(provider),
    serverPays: providers.serverKey(provider) !== undefined,
    ...(call.identity && alsoByok.length > 0 ? { alsoByok } : {}),
    // A server prompt never goes to a caller's own account; a call its route refused, never to the platform.
    mayPay: (mode) => {
      platformRefused(refused)(mode);
      for (const r of prompt.resolved) assertPromptMayUse(r, mode);
    },
  });
  let key: { apiKey: string; storedKey?: true } = { apiKey: hold.apiKey ?? providers.serverKey(provider)! };
  // Paid with the caller's stored key on a route the platform's plan accepted: planned again for
  // the caller's keys, each target it may reach with one (the key billing chose for `paid`, the
  // caller's stored key for another provider that accepts own keys, read when reached).
  const paid = hold.keyProvider ?? provider;
  if (hold.mode === 'byok' && input.apiKey === undefined && (!refused || paid !== provider) && choice.route && planned.length > 0) {
    const mayUse = (t: ModelTarget) =>
      (t.provider === paid || (deps.storedKey !== undefined && providers.isByokProvider(t.provider))) &&
      maxTokens <= (providers.models.get(t.provider, t.model)?.maxOutputTokens ?? maxTokens);
    const again = await planForStoredKey(deps.routing!, choice.route.name, choice.route.targets.filter(mayUse), planned, paid);
    if (again[0]) reachable = reachableModels(deps, again[0], input.fallbacks, reach, again);
    if (reachable[0]!.provider !== paid) key = { apiKey: '', storedKey: true };
  }
  const served = reachable[0]!;
  return {
    requestId,
    provider: served.provider,
    model: served.model,
    route: served.route,
    ...key,
    mode: hold.mode,
    maxTokens,
    inputEstimate,
    estimatedTokens,
    costInput,
    prompt,
    hold,
    reachable,
  };
}

/** The AI SDK arguments both calls share: model, prompt, tools, structured output, limits. */
export async function sdkCallArgs(deps: CallDeps, p: PreparedCall, input: TextCallInput, abortSignal: AbortSignal) {
  const { ai: sdk } = await loadAiSdk();
  const tools = input.tools?.length
    ? (Object.fromEntries(
        input.tools.map((t) => [
          t.name,
          sdk.tool({
            ...(t.description ? { description: t.description } : {}),
            inputSchema: sdk.jsonSchema(objectRoot(t.parameters) as never),
          }),
        ]),
      ) as ToolSet)
    : undefined;
  const strictJsonSchema = input.output ? isStrictSchema(objectRoot(input.output.schema)) : undefined;
  return {
    model: await deps.providers.languageModel(p.provider, p.model, p.apiKey, {
      ...(strictJsonSchema === undefined ? {} : { strictJsonSchema }),
      ...(input.options?.stopSequences?.length ? { stopSequences: true } : {}),
    }),
    ...(strictJsonSchema === undefined ? {} : { providerOptions: { openai: { strictJsonSchema } } }),
    ...(p.prompt.system ? { system: p.prompt.system } : {}),
    ...(p.prompt.messages ? { messages: p.prompt.messages } : { prompt: p.prompt.prompt ?? '' }),
    ...(tools ? { tools } : {}),
    ...(input.toolChoice ? { toolChoice: input.toolChoice } : {}),
    ...(input.output
      ? {
          output: sdk.Output.object({
            schema: sdk.jsonSchema(objectRoot(input.output.schema) as never),
            ...(input.output.name ? { name: input.output.name } : {}),
            ...(input.output.description ? { description: input.output.description } : {}),
          }),
        }
      : {}),
    maxOutputTokens: p.maxTokens,
    ...(input.options?.temperature !== undefined ? { temperature: input.options.temperature } : {}),
    ...(input.options?.topP !== undefined ? { topP: input.options.topP } : {}),
    ...(input.options?.stopSequences?.length ? { stopSequences: input.options.stopSequences } : {}),
    ...(input.options?.seed !== undefined ? { seed: input.options.seed } : {}),
    maxRetries: deps.config.ai.maxRetries,
    abortSignal,
    // Never fetch a client-supplied URL from the server (SSRF): a URL the provider cannot
    // fetch itself is refused; such parts must be sent inline.
    experimental_download: async (requests: Array<{ url: URL; isUrlSupportedByModel: boolean }>) =>
      requests.map((r) => {
        if (r.isUrlSupportedByModel) return null;
        throw new CoreError(
          'INVALID_PARAMS',
          `${p.provider} cannot fetch attachment URLs for ${p.model}; send the part inline (base64 or data: URL)`,
          {
            details: { reason: 'unsupported_input', provider: p.provider },
          },
        );
      }),
  };
}
