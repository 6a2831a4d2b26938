import { requestIdV7 } from '../../lib/requestIdV7.js';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import { assertKeyAllowsModel } from '../apiKeys/keyRules.js';
import { loadAiSdk } from './aiSdk.js';
import type { SettledUsage, UsageMetadata } from '../metering/Metering.js';
import type { CallDeps, TextCall } from './prepareCall.js';
import { resolveModelName } from './routing/resolveModelName.js';
import { routeTargets } from './routing/routeTargets.js';
import type { RouteSlot } from './routing/RouteSlot.js';
import { planForStoredKey, planRoute, platformRefused, storedKeyPaysOrRefuse, type RoutePlan } from './routing/planRoute.js';
import type { ProviderRegistry } from './ProviderRegistry.js';
import { accountCall } from './accountCall.js';
import { attemptLoop, settleLoop } from './attemptLoop.js';
import { loadUpstreamFetch } from './upstreamFetch.js';

/** ai.embed input. */
export interface EmbedInput {
  /** `provider/model`, a bare provider (its first embedding model), an alias or a route (its targets must be embedding models). */
  model: string;
  /** One text or up to 2048. */
  input: string | string[];
  /** Output dimensions, for models that can shorten their vectors (OpenAI text-embedding-3, Gemini). */
  dimensions?: number;
  apiKey?: string;
  metadata?: UsageMetadata;
}

export interface EmbedOutput {
  success: true;
  data: { provider: ProviderId; model: string; embeddings: number[][]; usage: { inputTokens: number | null }; requestId: string };
  tokenUsage?: SettledUsage;
  usageInfo?: { tokensUsed: number; estimatedCostUsd: number };
}

/** `provider/model` as an embedding model: allowed, and not a language model (by the registry). */
function embeddingModel(providers: ProviderRegistry, provider: ProviderId, candidate: string): string {
  const model = providers.assertModelAllowed(provider, candidate);
  const info = providers.models.get(provider, model);
  if (info && (info.kind ?? 'language') !== 'embedding') {
    throw new CoreError('INVALID_PARAMS', `${provider}/${model} is not an embedding model`, {
      details: { reason: 'not_an_embedding_model', provider, field: 'model' },
    });
  }
  return model;
}

/** The models one embedding call may be served by, in order: its own, or the targets a route planned (docs/ai.md#routes). */
async function embedModels(
  deps: CallDeps,
  ref: string,
  call: TextCall,
  ownKey: boolean,
): Promise<RoutePlan<{ provider: ProviderId; model: string; route?: RouteSlot }>> {
  const { providers } = deps;
  const name = resolveModelName(deps, ref);
  if (name.kind === 'route') {
    const admitted = routeTargets(providers, name.name, name.route, call.identity?.apiKey, 'throw');
    for (const t of admitted) embeddingModel(providers, t.provider, t.model);
    if (!deps.routing) return { planned: admitted.slice(0, 1) };
    return planRoute(deps.routing, name.name, admitted, {
      ownKey,
      fallbacks: false,
      identity: call.identity,
      metering: deps.metering,
      byok: (p) => providers.isByokProvider(p),
    });
  }
  const provider = providers.assertKnown(name.provider);
  // A bare provider: its first allowed embedding model in the registry's order (the provider's
  // recommended one comes first: OpenAI's text-embedding-3-small), not the alphabetical first.
  const candidate =
    name.model || providers.models.models(provider).find((m) => m.kind === 'embedding' && providers.isModelAllowed(provider, m.id))?.id;
  if (!candidate)
    throw new CoreError('INVALID_PARAMS', `${provider} has no embedding model configured; name one as ${provider}/<model>`, {
      details: { reason: 'no_embeddings', provider, field: 'model' },
    });
  const model = embeddingModel(providers, provider, candidate);
  assertKeyAllowsModel(call.identity?.apiKey, provider, model);
  return { planned: [{ provider, model }] };
}

/**
 * One embedding call: the same payer rules, reservation and settlement as ai.generateText,
 * metered by input tokens (priced with the registry's inputUsdPerMTok). No fallbacks: another
 * model's vectors live in another space, so a silent switch would corrupt an index. A route is
 * the exception its config chose: its targets (deployments of one model, docs/ai.md#routes) are
 * tried in its strategy's order, with its cooldowns and retries, the call charged once for the
 * target that served.
 */
export async function runEmbed(deps: CallDeps, input: EmbedInput, call: TextCall): Promise<EmbedOutput> {
  const { config, providers, logger } = deps;
  const ai = config.ai;
  const plan = await embedModels(deps, input.model, call, input.apiKey !== undefined);
  const { refused } = plan;
  let { planned } = plan;
  const { provider } = planned[0]!;
  const values = typeof input.input === 'string' ? [input.input] : input.input;
  const chars = values.reduce((n, v) => n + v.length, 0);
  if (chars > ai.maxContentChars)
    throw new CoreError('PAYLOAD_TOO_LARGE', `input may have at most ${ai.maxContentChars} characters in all`, {
      details: { field: 'input' },
    });

  // An upper bound: no tokenizer encodes fewer than one byte per token.
  const estimate = values.reduce((n, v) => n + Buffer.byteLength(v, 'utf8'), 0) + values.length;
  const requestId = requestIdV7();
  const cost = (t: { provider: ProviderId; model: string }) => providers.models.estimateEmbeddingCostUsd(t.provider, t.model, estimate);
  // The hold covers the dearest target the call may reach (as a text call's worstCostUsd).
  const ownCost = cost(planned[0]!);
  const costUsd = ownCost === undefined ? undefined : Math.max(ownCost, ...planned.slice(1).map((t) => cost(t) ?? 0));
  await storedKeyPaysOrRefuse(deps.metering, refused, {
    identity: call.identity,
    providers: providers.isByokProvider(provider) ? [provider] : [],
    estimatedTokens: estimate,
  });
  const hold = await deps.metering.hold({
    identity: call.identity,
    ...(call.ip ? { ip: call.ip } : {}),
    requestId,
    provider,
    estimatedTokens: estimate,
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(input.apiKey !== undefined ? { ownKey: input.apiKey } : {}),
    byokAllowed: providers.isByokProvider(provider),
    serverPays: providers.serverKey(provider) !== undefined,
    // A call its route refused is never paid by the platform (planRoute).
    mayPay: platformRefused(refused),
  });
  // Paid with the caller's stored key on a route the platform's plan accepted: planned again for that key (as prepareCall).
  const route = planned[0]!.route;
  if (hold.mode === 'byok' && input.apiKey === undefined && !refused && route && deps.routing) {
    // Only the key billing chose: an embedding call reaches no other provider with a stored key.
    const admitted = routeTargets(providers, route.name, config.ai.routes[route.name]!, call.identity?.apiKey, 'none');
    const again = await planForStoredKey(
      deps.routing,
      route.name,
      admitted.filter((t) => t.provider === provider),
      planned,
      provider,
    );
    planned = again;
  }
  const first = { ...planned[0]!, requestId, apiKey: hold.apiKey ?? providers.serverKey(provider)! };
  // A route's other targets, with the same payer: the server's key for their provider, or the
  // caller's own key within its provider; an unpriced one not when a money limit applies.
  const targets = [first];
  for (const t of planned.slice(1)) {
    if (hold.usdLimited && cost(t) === undefined) continue;
    const apiKey = hold.mode === 'platform' ? providers.serverKey(t.provider) : t.provider === provider ? first.apiKey : undefined;
    if (apiKey) targets.push({ ...t, requestId, apiKey, route: t.route });
  }

  let result: { embeddings: number[][]; usage: { tokens: number } };
  let servedBy: (typeof targets)[number];
  try {
    const served = await settleLoop(
      // biome-ignore lint/correctness/useYield: attemptLoop takes a generator; a non-streamed attempt yields nothing, it returns its result
      attemptLoop(deps, targets, call, async function* (t, ctx) {
        const [{ ai: sdk }, embeddingModel] = await Promise.all([
          loadAiSdk(),
          providers.embeddingModel(t.provider, t.model, t.apiKey),
          loadUpstreamFetch(),
        ]);
        ctx.start();
        if (ctx.signal.aborted) throw new Error('aborted before the upstream call');
        const dims =
          input.dimensions === undefined
            ? undefined
            : {
                openai: { dimensions: input.dimensions },
                google: { outputDimensionality: input.dimensions },
                [t.provider]: { dimensions: input.dimensions },
              };
        return await sdk.embedMany({
          model: embeddingModel,
          values,
          maxRetries: ai.maxRetries,
          abortSignal: ctx.signal,
          ...(dims ? { providerOptions: dims } : {}),
        });
      }),
    );
    result = served.value;
    servedBy = served.target;
  } catch (err) {
    await hold.release(err instanceof CoreError ? String(err.details?.reason ?? err.appCode) : 'failed');
    throw err;
  }
  if (call.signal.aborted) {
    await hold.release('cancelled');
    throw new CoreError('CANCELLED', 'the request was cancelled by the client');
  }
  const reported = result.usage?.tokens ? result.usage.tokens : undefined;
  const tokensUsed = reported ?? estimate;
  if (reported === undefined)
    logger.warn('ai: upstream reported no embedding usage; charging the estimate', {
      requestId,
      provider: servedBy.provider,
      model: servedBy.model,
    });
  const data: EmbedOutput['data'] = {
    provider: servedBy.provider,
    model: servedBy.model,
    embeddings: result.embeddings,
    usage: { inputTokens: reported ?? null },
    requestId,
  };
  const charged = await accountCall(
    deps,
    hold,
    providers.models.estimateEmbeddingCostUsd(servedBy.provider, servedBy.model, tokensUsed),
    call,
    { provider: servedBy.provider, model: servedBy.model, metadata: input.metadata, route: servedBy.route },
    { tokensUsed },
  );
  return { success: true, data, ...charged };
}
