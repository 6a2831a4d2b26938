import { CoreError, guardedFetch, isCoreError } from '@ai-backend/core/internal';
import { z } from 'zod';
import type { OAuthSettings } from './oauthSettings.js';
import type { ClientRecord } from './records.js';
import { redirectUriProblem, WebUrlSchema } from './redirectUris.js';

type CimdSettings = OAuthSettings['clientIdMetadataDocuments'];

/** Why a URL client_id cannot be used: CoreError BAD_REQUEST, `details.reason` 'invalid_client_metadata'. */
function unusable(message: string): CoreError {
  return new CoreError('BAD_REQUEST', message, { details: { reason: 'invalid_client_metadata' } });
}

/**
 * The document (draft-ietf-oauth-client-id-metadata-document §4.1, MCP client registration):
 * client_id, client_name and redirect_uris are required. Shared-secret authentication is
 * forbidden (there is no secret to share); `private_key_jwt` is not supported here, so such
 * clients are refused rather than half-served. Unknown members are ignored.
 */
const DocumentSchema = z.object({
  client_id: z.string(),
  client_name: z.string().min(1).max(200),
  redirect_uris: z.array(z.string().max(2000)).min(1).max(20),
  token_endpoint_auth_method: z
    .literal('none', {
      error:
        "token_endpoint_auth_method must be 'none' (shared secrets are not allowed in a metadata document; private_key_jwt is not supported)",
    })
    .default('none'),
  // RFC 7591 §2: the default is authorization_code alone; clients that want refresh tokens say so.
  grant_types: z.array(z.string()).min(1).default(['authorization_code']),
  response_types: z.array(z.literal('code')).min(1).default(['code']),
  client_uri: WebUrlSchema.optional(),
  logo_uri: WebUrlSchema.optional(),
  scope: z.string().max(1000).optional(),
  software_id: z.string().max(200).optional(),
  software_version: z.string().max(100).optional(),
});

/** Does this client_id name a metadata document (a URL) rather than a registered client? */
export function isUrlClientId(clientId: string): boolean {
  return /^https?:\/\//i.test(clientId);
}

/**
 * Why this URL cannot be a client_id (draft §3): https with a host and a path, no fragment, no
 * credentials, no dot segments. Null when it may be one.
 */
export function clientIdUrlProblem(clientId: string, settings: CimdSettings): string | null {
  if (clientId.length > 2000) return 'client_id URL too long';
  let u: URL;
  try {
    u = new URL(clientId);
  } catch {
    return 'client_id is not a valid URL';
  }
  if (u.protocol !== 'https:' && !(settings.allowHttp && u.protocol === 'http:')) return 'a client_id URL must use https';
  if (clientId.includes('#')) return 'a client_id URL must not contain a fragment';
  if (u.username || u.password) return 'a client_id URL must not contain credentials';
  if (u.pathname === '/' || u.pathname === '') return 'a client_id URL must contain a path';
  // new URL() removes dot segments: a URL that changes when normalized had them.
  const rawPath = clientId.replace(/[?].*$/, '');
  if (/\/(\.|%2e){1,2}(\/|$)/i.test(rawPath)) return 'a client_id URL must not contain dot segments';
  if (settings.allowedHosts && !settings.allowedHosts.some((h) => hostMatches(h, u.hostname)))
    return `client_id host ${u.hostname} is not trusted here`;
  return null;
}

function hostMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase();
  return p.startsWith('*.') ? host.endsWith(p.slice(1)) && host.length > p.length - 1 : host === p;
}

/** Seconds a response may be cached for, from its Cache-Control (RFC 9111 §5.2.2), else undefined. */
export function cacheSeconds(cacheControl: string | null): number | undefined {
  if (!cacheControl) return undefined;
  const cc = cacheControl.toLowerCase();
  if (/(^|,)\s*(no-store|no-cache)\b/.test(cc)) return 0;
  const m = /(?:^|,)\s*max-age\s*=\s*"?(\d+)/.exec(cc);
  return m ? Number(m[1]) : undefined;
}

const CACHE_LIMIT = 1000;
/**
 * A document that could not be used is not fetched again for this long: anyone can name any URL
 * as client_id, and without this each authorize request would make us fetch it again.
 */
const FAILURE_TTL_MS = 30_000;

/**
 * Resolves URL client_ids to client records by fetching their metadata documents, with the
 * SSRF guards of core's `guardedFetch` (public addresses only, no redirects, size and time
 * limits) and a bounded in-memory cache that honours the response's Cache-Control.
 * Concurrent requests for one document share one fetch.
 */
export class ClientIdMetadataDocuments {
  private readonly cache = new Map<string, { until: number; client: ClientRecord }>();
  private readonly failures = new Map<string, { until: number; error: CoreError }>();
  private readonly inFlight = new Map<string, Promise<ClientRecord>>();

  constructor(private readonly settings: CimdSettings) {}

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /** The client a URL client_id describes; throws CoreError BAD_REQUEST saying why not. */
  async resolve(clientId: string): Promise<ClientRecord> {
    if (!this.settings.enabled) throw unusable('client ID metadata documents are not accepted here');
    const problem = clientIdUrlProblem(clientId, this.settings);
    if (problem) throw unusable(problem);
    const now = Date.now();
    const hit = this.cache.get(clientId);
    if (hit && hit.until > now) return hit.client;
    const failed = this.failures.get(clientId);
    if (failed && failed.until > now) throw failed.error;
    let pending = this.inFlight.get(clientId);
    if (!pending) {
      pending = this.fetchDocument(clientId)
        .catch((err: unknown) => {
          if (isCoreError(err)) {
            if (this.failures.size >= CACHE_LIMIT) this.failures.delete(this.failures.keys().next().value!);
            this.failures.set(clientId, { until: Date.now() + FAILURE_TTL_MS, error: err });
          }
          throw err;
        })
        .finally(() => this.inFlight.delete(clientId));
      this.inFlight.set(clientId, pending);
    }
    return pending;
  }

  private async fetchDocument(clientId: string): Promise<ClientRecord> {
    const s = this.settings;
    let res;
    try {
      res = await guardedFetch(clientId, {
        timeoutMs: s.timeoutMs,
        maxBytes: s.maxBytes,
        allowHttp: s.allowHttp,
        allowPrivateNetwork: s.allowPrivateNetwork,
        headers: { accept: 'application/json' },
      });
    } catch (err) {
      const why = isCoreError(err) ? err.message : 'fetch failed';
      throw unusable(`the client metadata document could not be fetched: ${why}`);
    }
    if (res.status !== 200) throw unusable(`the client metadata document answered HTTP ${res.status}`);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw unusable('the client metadata document is not valid JSON');
    }
    if (json && typeof json === 'object' && ('client_secret' in json || 'client_secret_expires_at' in json)) {
      throw unusable('the client metadata document must not contain a client secret');
    }
    const parsed = DocumentSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw unusable(`the client metadata document is invalid: ${issue?.path.join('.') || 'document'}: ${issue?.message ?? 'invalid'}`);
    }
    const doc = parsed.data;
    // Exact string comparison (draft §4.1): no normalization, or another URL could speak for this one.
    if (doc.client_id !== clientId) throw unusable('the client_id in the metadata document differs from its URL');
    for (const uri of doc.redirect_uris) {
      // Private-use schemes are not accepted from documents: anyone can publish one.
      const problem = redirectUriProblem(uri, []);
      if (problem) throw unusable(`the client metadata document lists a bad redirect URI: ${problem}`);
    }
    const grantTypes = doc.grant_types.filter((g) => g === 'authorization_code' || g === 'refresh_token');
    const maxAge = cacheSeconds(res.headers.get('cache-control')) ?? s.cacheTtlSec;
    const client: ClientRecord = {
      ...doc,
      grant_types: grantTypes.length > 0 ? grantTypes : ['authorization_code'],
      client_id: clientId,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      metadata_document: true,
      exp: Number.MAX_SAFE_INTEGER,
    };
    const ttlMs = Math.min(maxAge, s.maxCacheTtlSec) * 1000;
    if (ttlMs > 0) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(clientId, { until: Date.now() + ttlMs, client });
    }
    return client;
  }
}
