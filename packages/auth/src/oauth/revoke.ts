import type { Handler } from 'hono';
import { authenticateClient, readForm } from './clientAuth.js';
import { sha256 } from './crypto.js';
import { NO_STORE, oauthError } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';
import type { RefreshRecord } from './records.js';
import { revokeSession } from './token.js';

/**
 * POST /oauth/revoke (RFC 7009): a client signs out by revoking its refresh or access token;
 * either ends the session, so all tokens of the grant stop working. Unknown tokens get 200 too.
 */
export function revokeHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const form = await readForm(c);
    const token = form?.get('token');
    if (!form || !token) return oauthError(c, 400, 'invalid_request', 'token is required');
    const auth = await authenticateClient(c, form, s);
    if (!auth.ok) return oauthError(c, 401, 'invalid_client', auth.description);

    const refresh = await s.store.get<RefreshRecord>('refresh', sha256(token));
    let sid = refresh?.clientId === auth.client.client_id ? refresh.sid : undefined;
    if (!refresh && token.split('.').length === 3) {
      const verified = await s.tokens.verify(token).catch(() => undefined);
      if (verified?.session.clientId === auth.client.client_id) sid = verified.session.sid;
    }
    if (sid) await revokeSession(s, sid, 'revoked by the client');
    return c.body(null, 200, NO_STORE);
  };
}
