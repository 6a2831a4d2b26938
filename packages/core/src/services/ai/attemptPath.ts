import type { CallDeps, PreparedCall, TextCall, TextCallInput } from './prepareCall.js';
import type { AttemptPath } from './passThrough/wireRequest.js';

const SDK: AttemptPath = { kind: 'sdk' };

/**
 * Where an attempt's output goes: to the caller only, or, for a stream whose answer the response
 * cache stores, also into a cache entry (built from the events only the SDK path reads).
 */
export type AttemptOutput = 'caller' | 'caller-and-stream-cache';

/**
 * How one attempt reaches its target (docs/ai.md#pass-through). The pass-through path is taken
 * when `ai.passThrough` is on, the call came in a vendor's wire format (call.wire, /v1 only) and
 * the target speaks that format (ProviderRegistry.passThroughEndpoint), unless the call needs
 * what only the SDK path does: structured output (the server validates the answer against the
 * schema), a server prompt (`@name`, resolved on the server and never sent as the caller wrote
 * it), or, on a stream, storing the answer in the response cache (an entry is built from the
 * events the SDK path reads). Everything around the attempt (payer, hold, targets, fallbacks,
 * breaker, routes, settlement, statistics) is the same on both paths.
 */
export function attemptPath(
  deps: CallDeps,
  t: PreparedCall,
  input: TextCallInput,
  call: TextCall,
  destination: AttemptOutput,
): AttemptPath {
  const wire = call.wire;
  if (!wire || !deps.config.ai.passThrough || input.output || destination === 'caller-and-stream-cache') return SDK;
  for (const r of t.prompt.resolved) if (r.name !== undefined) return SDK;
  const endpoint = deps.providers.passThroughEndpoint(t.provider, t.model, t.apiKey, wire.format);
  return endpoint ? { kind: 'pass-through', endpoint } : SDK;
}
