import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { FetchFunction } from './upstreamFetch.js';

/**
 * Model ids, checked before any upstream request. Some providers put the id in the URL (Google:
 * `POST <base>/models/<id>:generateContent`), so an id is a strict token, never a path:
 * letters, digits, `.`, `_`, `-` and `:` (OpenAI fine-tunes `ft:gpt-4o:org::id`, OpenRouter
 * variants `:free`), starting with a letter or digit, at most 200 characters. OpenRouter ids
 * have one `vendor/` part (`anthropic/claude-3.5-sonnet`); its id travels in the JSON body. No
 * `/` elsewhere, no `%`, `?`, `#`, spaces or dot segments.
 *
 * Exported for every caller that takes a model id from a request (generateText, streaming,
 * chat, fallbacks): call `canonicalModelId` first and use only its result.
 */
const TOKEN = '[A-Za-z0-9][A-Za-z0-9._:-]*';
const SYNTAX = {
  token: new RegExp(`^${TOKEN}$`),
  vendor: new RegExp(`^(?:${TOKEN}/)?${TOKEN}$`),
  // Named providers whose model id travels in the JSON body (vLLM serves `org/model` names).
  body: new RegExp(`^(?:${TOKEN}/){0,3}${TOKEN}$`),
} as const;
/**
 * Which ids a provider takes: `token` (the id is part of a URL path), `vendor` (OpenRouter's one
 * `vendor/` prefix), `body` (named OpenAI-wire providers, up to three `/` parts).
 */
export type ModelIdSyntax = keyof typeof SYNTAX;
export const MAX_MODEL_ID_LENGTH = 200;

/**
 * The canonical form of a model id for `provider`, or INVALID_PARAMS. Google's optional
 * `models/` prefix is removed (the SDK adds it back), so `models/gemini-2.5-pro` and
 * `gemini-2.5-pro` are the same model for allow and block lists.
 */
export function canonicalModelId(
  provider: ProviderId,
  model: string,
  syntax: ModelIdSyntax = provider === 'openrouter' ? 'vendor' : 'token',
): string {
  const id = provider === 'google' && model.startsWith('models/') ? model.slice('models/'.length) : model;
  if (id.length === 0 || id.length > MAX_MODEL_ID_LENGTH || !SYNTAX[syntax].test(id)) {
    throw new CoreError(
      'INVALID_PARAMS',
      `invalid model id for ${provider}: use letters, digits, ".", "_", "-" and ":"${syntax === 'vendor' ? ' (and one "vendor/" prefix)' : syntax === 'body' ? ' (and up to three "/" parts)' : ''}`,
      {
        details: { reason: 'invalid_model_id', provider },
      },
    );
  }
  return id;
}

/**
 * A fetch that only ever requests URLs under `baseUrl`: same origin, path inside the base path
 * after normalisation, and no query string the base did not have. Whatever an input does to the
 * URL a provider SDK builds, the request (and the key in its headers) cannot leave the configured
 * endpoint. A violation is refused before any byte is sent.
 */
export function pinnedFetch(baseUrl: string, inner: FetchFunction, extraQueryKeys: readonly string[] = []): FetchFunction {
  const base = new URL(baseUrl.replace(/\/+$/, '') + '/');
  // Computed once: sameQuery then skips URLSearchParams for the usual query-less URL, most of this check's CPU per call.
  const baseHasQuery = [...base.searchParams].length > 0;
  return (input, init) => {
    const raw = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    let target: URL;
    try {
      target = new URL(raw);
    } catch {
      return Promise.reject(new CoreError('INVALID_PARAMS', 'the upstream URL is invalid', { details: { reason: 'invalid_model_id' } }));
    }
    // Raw text checks too: `new URL` has already resolved `..` and `%2e%2e` segments by now, so
    // compare the normalised path, and refuse encoded separators the upstream might decode.
    const inside =
      target.origin === base.origin &&
      target.pathname.startsWith(base.pathname) &&
      (target.search === '' ? !baseHasQuery : sameQuery(base, target, extraQueryKeys)) &&
      !/%2f|%5c|%2e/i.test(target.pathname);
    if (!inside) {
      return Promise.reject(
        new CoreError('INVALID_PARAMS', 'the request would leave the configured provider endpoint', {
          details: { reason: 'invalid_model_id' },
        }),
      );
    }
    return inner(input, init);
  };
}

/**
 * The base's query, plus at most the SDKs' own `alt=sse` (Google streaming) and the keys a
 * vendor SDK adds itself (Azure's `api-version`); nothing else.
 */
function sameQuery(base: URL, target: URL, extraKeys: readonly string[]): boolean {
  const rest = new URLSearchParams(target.search);
  for (const [k, v] of base.searchParams) {
    if (rest.get(k) !== v) return false;
    rest.delete(k);
  }
  return [...rest].every(([k, v]) => (k === 'alt' && v === 'sse') || extraKeys.includes(k));
}
