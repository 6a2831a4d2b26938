import type { Handler } from 'hono';
import { isCoreError } from '@ai-backend/core';
import { bearerChallenge, mcpResourceUrl, resourceMetadataUrl } from './challenge.js';
import { NO_STORE } from './oauthResponses.js';
import type { OAuthServices } from './oauthServices.js';

/** GET|POST /oauth/userinfo: who our access token belongs to. Only our own tokens are accepted. */
export function userinfoHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    const base = s.baseUrl(c);
    const challenge = (error?: 'invalid_token', description?: string) =>
      c.json({ error: error ?? 'invalid_request', ...(description ? { error_description: description } : {}) }, 401, {
        ...NO_STORE,
        'WWW-Authenticate': bearerChallenge({ resourceMetadata: resourceMetadataUrl(base), error, errorDescription: description }),
      });
    const m = /^Bearer[ ]+(\S+)$/i.exec(c.req.header('authorization') ?? '');
    if (!m) return challenge();
    try {
      const { identity, session } = await s.tokens.verify(m[1]!, { resource: mcpResourceUrl(base) });
      return c.json(
        { sub: identity.sub, ...(identity.email ? { email: identity.email } : {}), ...(session.name ? { name: session.name } : {}) },
        200,
        NO_STORE,
      );
    } catch (err) {
      if (!isCoreError(err)) throw err;
      return challenge('invalid_token', err.message);
    }
  };
}
