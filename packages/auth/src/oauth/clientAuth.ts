import type { Context } from 'hono';
import { safeEqual, sha256 } from './crypto.js';
import type { OAuthServices } from './oauthServices.js';
import type { ClientRecord } from './records.js';

export type ClientAuthResult = { ok: true; client: ClientRecord } | { ok: false; usedBasic: boolean; description: string };

/** Read `client_id:client_secret` from HTTP Basic (RFC 6749 §2.3.1: both form-encoded first). */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header?.trim() ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return undefined;
  const dec = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
}

/**
 * Authenticate the client at the token and revocation endpoints: public clients ('none') by
 * client_id alone, confidential ones by secret in Basic or in the body, whichever they registered
 * or the other (RFC 6749 lets the server accept both).
 */
export async function authenticateClient(c: Context, form: URLSearchParams, s: OAuthServices): Promise<ClientAuthResult> {
  const basic = basicCredentials(c.req.header('authorization'));
  const usedBasic = basic !== undefined;
  const bodyId = form.get('client_id') ?? undefined;
  if (basic && bodyId && bodyId !== basic.id)
    return { ok: false, usedBasic, description: 'client_id differs from the authenticated client' };
  const clientId = basic?.id ?? bodyId;
  if (!clientId) return { ok: false, usedBasic, description: 'client authentication required' };
  const secret = basic?.secret ?? form.get('client_secret') ?? undefined;
  if (basic && form.has('client_secret')) return { ok: false, usedBasic, description: 'use one client authentication method' };

  const { client, problem } = await s.findClient(clientId);
  if (!client) return { ok: false, usedBasic, description: problem };
  if (client.token_endpoint_auth_method === 'none') {
    if (secret) return { ok: false, usedBasic, description: 'public client must not send a secret' };
    return { ok: true, client };
  }
  if (!secret || !client.client_secret_hash || !safeEqual(sha256(secret), client.client_secret_hash)) {
    return { ok: false, usedBasic, description: 'client authentication failed' };
  }
  return { ok: true, client };
}

/** Parse an application/x-www-form-urlencoded body (the only encoding OAuth endpoints take). */
export async function readForm(c: Context): Promise<URLSearchParams | undefined> {
  const type = c.req.header('content-type') ?? '';
  if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded')) return undefined;
  const body = await c.req.text();
  if (body.length > 16_384) return undefined;
  const form = new URLSearchParams(body);
  // RFC 6749 §3.1: parameters must not be repeated.
  const names = [...form.keys()];
  return new Set(names).size === names.length ? form : undefined;
}
