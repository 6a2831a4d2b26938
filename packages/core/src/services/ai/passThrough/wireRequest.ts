/**
 * A /v1 call as the caller sent it, carried beside the translated procedure input so the call
 * engine may forward it unchanged (the pass-through path, docs/ai.md#pass-through). Set only by
 * the /v1 transport through the call's context, never from a procedure's input: the body is the
 * one the translation (and so the hold's estimate) was made from.
 */
export type WireFormat = 'openai-chat' | 'openai-responses' | 'anthropic-messages';

export interface WireRequest {
  format: WireFormat;
  /** The parsed JSON body, as received (never mutated: a forwarded copy is made per attempt). */
  body: Readonly<Record<string, unknown>>;
  stream: boolean;
  /**
   * The caller's request headers the pass-through path forwards (an allow-list, checked by the
   * transport): `anthropic-beta` on Anthropic Messages. Never sent on the SDK path.
   */
  headers?: Readonly<Record<string, string>>;
}

/**
 * How one attempt reaches its target: through the AI SDK (building and parsing the provider's
 * request and answer), or by forwarding the caller's own wire request to a target that speaks
 * the same format, its answer's bytes going back as they come. Chosen per target, so a call that
 * falls back from a pass-through target to one of another format is served by the SDK.
 */
export type AttemptPath = { kind: 'sdk' } | { kind: 'pass-through'; endpoint: PassThroughEndpoint };

/** Where a pass-through request goes and how it authenticates, as the AI SDK provider would send it. */
export interface PassThroughEndpoint {
  format: WireFormat;
  url: string;
  /** The target's model id (canonical), written into the forwarded body's `model`. */
  model: string;
  headers: Record<string, string>;
  /** The provider's pinned, observed fetch (the same one its SDK model gets). */
  fetch: typeof globalThis.fetch;
  /** The field the forwarded body's output limit goes in when the caller set none. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens' | 'max_output_tokens';
}
