import type { ProviderId } from '../../config/sections/ai.js';
import type { CallDeps, TextCall, TextCallInput } from './prepareCall.js';
import type { CachedAnswer } from './cache/ResponseCache.js';

/** How a call wants its answer: whole (`plain`) or as a stream. */
export type CallForm = 'plain' | 'stream';

/**
 * A plain /v1 call with `ai.passThrough` on: served by a target that speaks its format, its answer
 * is the upstream's own body (docs/ai.md#pass-through), so a hit must be that body too.
 */
export function answersWithWire(deps: CallDeps, call: TextCall, form: CallForm): boolean {
  return form === 'plain' && call.wire !== undefined && deps.config.ai.passThrough;
}

/**
 * Whether an entry gives this call what its own upstream call would have (docs/ai.md#response-cache):
 * a hit must not lose what a miss carries. A stream and a call on the SDK path answer in our
 * encoding (text, tool calls, finish reason, usage), which every entry holds. A plain call answered
 * with the upstream's body is given a stored body; an entry in our encoding only when this call
 * would have been answered in it too: stored by a plain call (the same request to the same target
 * takes the same path), or stored from a stream when the target does not speak the call's format
 * or the call asks for structured output (the SDK path's cases, attemptPath; a server prompt,
 * which also takes that path, is not looked for: such an entry is then a miss, and the plain
 * answer replaces it).
 */
export function servesForm(deps: CallDeps, input: TextCallInput, call: TextCall, form: CallForm, hit: CachedAnswer): boolean {
  if (!answersWithWire(deps, call, form) || hit.wire) return true;
  if (!hit.streamed || input.output) return true;
  return !deps.providers.passThroughEndpoint(hit.provider as ProviderId, hit.model, '', call.wire!.format);
}

/**
 * Top-level fields in which an answer repeats the request's prompt: OpenAI's Responses API echoes
 * `instructions` (the system prompt) and a `prompt` template reference with its variables.
 */
const ECHOED_PROMPT = ['instructions', 'prompt'] as const;

/** Whether a passed-through body repeats the request's prompt (ECHOED_PROMPT, not null or empty). */
function echoesPrompt(body: string): boolean {
  if (!ECHOED_PROMPT.some((k) => body.includes(`"${k}"`))) return false;
  try {
    const d = JSON.parse(body) as Record<string, unknown> | null;
    return typeof d === 'object' && d !== null && ECHOED_PROMPT.some((k) => d[k] !== undefined && d[k] !== null && d[k] !== '');
  } catch {
    return false;
  }
}

/**
 * A passed-through body as an entry holds it: UTF-8 text, when it decodes and encodes back to the
 * same bytes (null otherwise: such an answer is not stored, its replay would not be the same bytes).
 * Undefined: a body that repeats the request's prompt (echoesPrompt) is not kept, since an entry
 * never holds a prompt (docs/ai.md#response-cache); the answer is stored in our encoding instead,
 * and a hit is given as the SDK path gives it.
 */
export function storedWire(p: { body: Uint8Array; contentType: string }): CachedAnswer['wire'] | null | undefined {
  const bytes = Buffer.from(p.body.buffer, p.body.byteOffset, p.body.byteLength);
  const body = bytes.toString('utf8');
  if (!Buffer.from(body, 'utf8').equals(bytes)) return null;
  return echoesPrompt(body) ? undefined : { body, contentType: p.contentType };
}
