import { CoreError } from '../../../kernel/CoreError.js';
import { guardedFetch, type GuardedResponse } from '../../../net/guardedFetch.js';

/** How the gateway may reach one upstream and its authorization server. */
export interface UpstreamNet {
  /** Loopback and private addresses (and plain http) allowed: the server's `allowPrivateNetwork`. */
  allowPrivateNetwork: boolean;
  timeoutMs: number;
}

/** Metadata documents and token answers are small; anything bigger is not one. */
const MAX_BYTES = 256 * 1024;

function request(
  url: string,
  net: UpstreamNet,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
): Promise<GuardedResponse> {
  // OAuth 2.1 wants https for every endpoint; plain http only where private addresses are allowed (development).
  return guardedFetch(url, {
    timeoutMs: net.timeoutMs,
    maxBytes: MAX_BYTES,
    allowHttp: net.allowPrivateNetwork,
    allowPrivateNetwork: net.allowPrivateNetwork,
    ...init,
  });
}

/** The JSON object of a response, or undefined when the body is not one. */
export function jsonObject(res: GuardedResponse): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(res.body.toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const getJson = (url: string, net: UpstreamNet) => request(url, net, { headers: { accept: 'application/json' } });

export const postJson = (url: string, body: unknown, net: UpstreamNet, headers: Record<string, string> = {}) =>
  request(url, net, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

export const postForm = (url: string, form: Record<string, string>, net: UpstreamNet, headers: Record<string, string> = {}) =>
  request(url, net, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });

/** An OAuth error answer (RFC 6749 §5.2): its `error` code, for deciding; never its text in our messages unescaped. */
export function oauthErrorCode(res: GuardedResponse): string | undefined {
  const e = jsonObject(res)?.error;
  return typeof e === 'string' ? e : undefined;
}

export function upstreamFailure(what: string, res: GuardedResponse): CoreError {
  const code = oauthErrorCode(res);
  return new CoreError('UPSTREAM_ERROR', `${what} failed: HTTP ${res.status}${code ? ` (${code.slice(0, 64)})` : ''}`, {
    details: { status: res.status, ...(code ? { oauthError: code.slice(0, 64) } : {}) },
  });
}

/** The parameters of a `WWW-Authenticate: Bearer k="v", k=v` challenge (RFC 9110 §11.6.1), lower-cased names. */
export function bearerChallenge(header: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  const m = /(?:^|,)\s*Bearer\s+(.*)$/i.exec(header) ?? /^\s*Bearer\s*$/i.exec(header);
  const params = m?.[1] ?? '';
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  for (let p = re.exec(params); p; p = re.exec(params))
    out[p[1]!.toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3]!;
  return out;
}
