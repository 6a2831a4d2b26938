import type { Handler } from 'hono';
import { OPEN_CORS } from './metadata.js';
import type { OAuthServices } from './oauthServices.js';

/** GET /.well-known/jwks.json: the current signing key and retired ones whose tokens may still be live. */
export function jwksHandler(services: () => Promise<OAuthServices>): Handler {
  return async (c) => {
    const s = await services();
    // Short cache: after a rotation verifiers should see the new key within minutes.
    return c.json(s.keys.jwks(), 200, { ...OPEN_CORS, 'Cache-Control': 'public, max-age=300' });
  };
}
