import { resolveCallModel } from './callModel.js';
import type { CallDeps, TextCall, TextCallInput } from './prepareCall.js';
import type { CachedAnswer } from './cache/ResponseCache.js';
import type { WireRequest } from './passThrough/wireRequest.js';

/** A call's place in the cache: its entry key, and the entry when there is one to serve. */
export interface CacheLookup {
  key: string;
  hit: CachedAnswer | undefined;
}

/**
 * Look a call up in the response cache (undefined: the cache is off for it). The model is
 * resolved first, with every model rule of the call (an API key's `models` rule included), so a
 * hit is never served to a caller who could not have made the call; a call with its own provider
 * key is not cached (its answer was paid on the caller's account).
 */
export async function lookUpCall(deps: CallDeps, input: TextCallInput, call: TextCall): Promise<CacheLookup | undefined> {
  const { cache, config } = deps;
  if (!cache?.config.enabled || input.apiKey !== undefined) return undefined;
  const choice = resolveCallModel(deps, input, call.identity);
  const system = input.systemPrompt === undefined ? undefined : deps.prompts.resolve(input.systemPrompt);
  const key = cache.keyFor(
    {
      model: choice.route ? `route:${choice.route.name}` : `${choice.provider}/${choice.model}`,
      content: input.content,
      systemPrompt: input.systemPrompt,
      systemPromptText: system?.name ? system.text : undefined,
      messages: input.messages,
      tools: input.tools,
      toolChoice: input.toolChoice,
      output: input.output,
      maxTokens: input.options?.maxTokens ?? config.ai.defaultMaxTokens,
      temperature: input.options?.temperature,
      wire: call.wire && wireKey(call.wire),
    },
    call.identity,
    input.cache,
  );
  if (!key) return undefined;
  return { key, hit: input.cache === 'refresh' ? undefined : await cache.get(key) };
}

/** What of a /v1 request shapes its answer: all of it but the model (keyed above, resolved) and how it is delivered. */
function wireKey(wire: WireRequest): unknown {
  const { model: _model, stream: _stream, stream_options: _streamOptions, ...body } = wire.body;
  return [wire.format, body, wire.headers ?? null];
}
