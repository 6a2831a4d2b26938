import type { Handler } from 'hono';
import { z } from 'zod';
import { randomToken, safeEqual, sha256 } from './crypto.js';
import { NO_STORE, oauthError } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';
import type { ClientRecord } from './records.js';
import { redirectUriProblem, WebUrlSchema } from './redirectUris.js';

const DAY_MS = 86_400_000;

const text = (max: number) => z.string().min(1).max(max);

/** RFC 7591 §2 client metadata, as far as we use it. Unknown fields are ignored (§3.1). */
const ClientMetadataSchema = z.object({
  redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
  token_endpoint_auth_method: z.enum(['none', 'client_secret_basic', 'client_secret_post']).default('client_secret_basic'),
  // Both by default: clients that omit grant_types still expect to refresh (RFC 7591 lets the server choose).
  grant_types: z
    .array(z.enum(['authorization_code', 'refresh_token']))
    .min(1)
    .default(['authorization_code', 'refresh_token']),
  response_types: z.array(z.literal('code')).min(1).default(['code']),
  client_name: text(200).optional(),
  client_uri: WebUrlSchema.optional(),
  logo_uri: WebUrlSchema.optional(),
  scope: text(1000).optional(),
  software_id: text(200).optional(),
  software_version: text(100).optional(),
  // OpenID registration §2; MCP 2026-07-28 clients must send it. Stored and echoed back.
  application_type: z.enum(['native', 'web']).optional(),
});

/**
 * POST /register: dynamic client registration (RFC 7591). Policy 'open' lets anyone register;
 * 'token' needs `Authorization: Bearer <oauth.registration.initialAccessToken>`. Redirect URIs
 * must be https, loopback http (any port later, RFC 8252 §7.3) or an allowed private-use scheme.
 */
export function registerHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const reg = s.settings.registration;
    // Expired clients vanish with their storage TTL (Redis, the SQL stores' purge, the memory store's sweep).
    if (reg.policy === 'token') {
      const presented = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1]?.trim();
      if (!presented || !safeEqual(presented, reg.initialAccessToken!)) {
        return oauthError(c, 401, 'invalid_token', 'registration requires a valid initial access token', {
          'WWW-Authenticate': 'Bearer error="invalid_token"',
        });
      }
    }
    const raw = await c.req.text().catch(() => '');
    // Field caps bound each value; this bounds the whole document (unknown fields included).
    if (raw.length > 4 * reg.maxClientBytes)
      return oauthError(c, 400, 'invalid_client_metadata', `registration body larger than ${4 * reg.maxClientBytes} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return oauthError(c, 400, 'invalid_client_metadata', 'the registration body is not JSON (a client metadata object is expected)');
    }
    const parsed = ClientMetadataSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.join('.') || 'body';
      const error = where.startsWith('redirect_uris') ? 'invalid_redirect_uri' : 'invalid_client_metadata';
      return oauthError(c, 400, error, `${where}: ${issue?.message ?? 'invalid'}`);
    }
    const meta = parsed.data;
    for (const uri of meta.redirect_uris) {
      const problem = redirectUriProblem(uri, reg.allowedCustomSchemes);
      if (problem) return oauthError(c, 400, 'invalid_redirect_uri', problem);
    }

    const ip = s.clientIp(c);
    const day = Math.floor(Date.now() / DAY_MS);
    const count = (await s.store.storage.increment(`oauth:reg:${ip}:${day}`, 1, { ttlMs: DAY_MS })) ?? 0;
    if (count > reg.maxPerAddressPerDay) {
      s.logger.warn('oauth registration budget spent', { event: 'rate_limited', endpoint: 'register', ip });
      const retry = Math.max(1, Math.ceil(((day + 1) * DAY_MS - Date.now()) / 1000));
      return oauthError(c, 429, 'rate_limited', `at most ${reg.maxPerAddressPerDay} registrations per address and day`, {
        'Retry-After': String(retry),
      });
    }

    const clientId = randomToken(16);
    const secret = meta.token_endpoint_auth_method === 'none' ? undefined : randomToken(32);
    const issuedAt = Math.floor(Date.now() / 1000);
    const record: ClientRecord = {
      ...meta,
      client_id: clientId,
      ...(secret ? { client_secret_hash: sha256(secret) } : {}),
      client_id_issued_at: issuedAt,
      // Short until the client completes an authorization (token.ts extends it), so clients
      // registered and never used are pruned by their storage TTL within a day.
      exp: Date.now() + reg.unusedClientTtlSec * 1000,
    };
    if (JSON.stringify(record).length > reg.maxClientBytes) {
      return oauthError(c, 400, 'invalid_client_metadata', `client metadata larger than ${reg.maxClientBytes} bytes`);
    }
    await s.store.put('client', clientId, record);
    s.logger.info('oauth client registered', { event: 'client_registered', clientId, clientName: meta.client_name });

    const { client_secret_hash: _hash, exp: _exp, ...publicFields } = record;
    return c.json({ ...publicFields, ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}) }, 201, NO_STORE);
  };
}
