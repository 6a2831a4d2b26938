/**
 * Faults the test upstream can inject, chosen per request: by a marker in the prompt text
 * (`[[upstream:429:retry=7]]`) or through the control API (`upstream.failNext(...)`).
 */
export type UpstreamFault =
  /**
   * Answer with this HTTP status and the provider's error body. `retryAfter` (seconds) adds
   * Retry-After; `code` and `param` go in the body where the format has them (OpenAI's `code` and
   * `param`; Anthropic's and Google's error type when `code` is given).
   */
  | { kind: 'status'; status: number; retryAfter?: number; code?: string; param?: string }
  /** Accept the request and never answer (until the client gives up or the upstream closes). */
  | { kind: 'hang' }
  /** Send the status line, headers and part of the body (three frames of a stream), then destroy the socket. */
  | { kind: 'drop' }
  /** Streams: send the headers and the first frame, then nothing more (a stalled upstream). Otherwise like `hang`. */
  | { kind: 'stall' }
  /** Destroy the socket before sending anything. */
  | { kind: 'reset' }
  /** 200 with a body that is not valid JSON. */
  | { kind: 'malformed' }
  /** A valid reply without usage numbers (where the format allows leaving them out). */
  | { kind: 'noUsage' }
  /** Streams: answer with the plain JSON reply instead (a server that ignores the stream flag). Otherwise no fault. */
  | { kind: 'json' }
  /**
   * Streams: every frame but the last `omit`, then the socket destroyed (or, `clean`, the response
   * ended as if complete; `stall`, nothing more sent on an open connection): a stream cut before or
   * after its usage event (usageFaults.ts). Otherwise like `drop`.
   */
  | { kind: 'truncate'; omit: number; clean?: boolean; stall?: boolean }
  /**
   * A hostile usage report (OpenAI Chat, Responses and Anthropic formats): these values in place of
   * the real token counts, any JSON value (`undefined` leaves the field out); on a stream, `again`
   * sends a second usage event with its values after the first (usageFaults.ts).
   */
  | { kind: 'usage'; values: UsageValues; again?: UsageValues };

/** Token counts a hostile upstream reports instead of the real ones, as any JSON value. */
export interface UsageValues {
  input?: unknown;
  output?: unknown;
  total?: unknown;
}

export interface MarkerDirectives {
  fault?: UpstreamFault;
  latencyMs?: number;
  /** Delay between the frames of a streamed reply, in ms. */
  chunkDelayMs?: number;
  /** Output tokens for this request (still capped by maxTokens). */
  outputTokens?: number;
  /** Input tokens the reply reports as read from the provider's prompt cache (at most its input; ReplyParts.cachedTokens). */
  cachedTokens?: number;
}

const MARKER = /\[\[upstream:([a-z0-9=:.-]+)\]\]/gi;

/**
 * Read the `[[upstream:...]]` markers of a prompt. Recognised:
 * `401`, `403`, `429`, `429:retry=<s>`, `500`, `<any status>`, `hang`, `drop`, `reset`,
 * `malformed`, `no-usage`, `json`, `stall`, `truncate=<frames>`, `truncate-clean=<frames>`,
 * `truncate-stall=<frames>`, `latency=<ms>`, `chunk-delay=<ms>`, `output=<tokens>`, `cached=<tokens>`.
 */
export function parseMarkers(text: string): MarkerDirectives {
  const out: MarkerDirectives = {};
  for (const match of text.matchAll(MARKER)) {
    const [head, ...rest] = match[1]!.toLowerCase().split(':');
    const opts = Object.fromEntries(rest.map((r) => r.split('=') as [string, string]));
    if (/^\d{3}$/.test(head!)) {
      const retry = opts.retry !== undefined ? Number(opts.retry) : undefined;
      out.fault = { kind: 'status', status: Number(head), ...(retry !== undefined && Number.isFinite(retry) ? { retryAfter: retry } : {}) };
    } else if (head === 'hang' || head === 'stall' || head === 'drop' || head === 'reset' || head === 'malformed' || head === 'json') {
      out.fault = { kind: head };
    } else if (head === 'no-usage') {
      out.fault = { kind: 'noUsage' };
    } else if (head?.startsWith('truncate=') || head?.startsWith('truncate-clean=') || head?.startsWith('truncate-stall=')) {
      const [name, n] = head.split('=') as [string, string];
      out.fault = {
        kind: 'truncate',
        omit: Number(n) || 0,
        ...(name === 'truncate-clean' ? { clean: true } : name === 'truncate-stall' ? { stall: true } : {}),
      };
    } else if (head?.startsWith('latency=')) {
      out.latencyMs = Number(head.slice('latency='.length)) || 0;
    } else if (head?.startsWith('chunk-delay=')) {
      out.chunkDelayMs = Number(head.slice('chunk-delay='.length)) || 0;
    } else if (head?.startsWith('output=')) {
      out.outputTokens = Number(head.slice('output='.length)) || 0;
    } else if (head?.startsWith('cached=')) {
      out.cachedTokens = Number(head.slice('cached='.length)) || 0;
    }
  }
  return out;
}
