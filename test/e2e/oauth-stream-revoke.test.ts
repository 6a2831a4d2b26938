/**
 * A stream opened with an access token of our authorization server ends as soon as its grant is
 * revoked (docs/security.md, "Streams and the credential"), on another instance than the
 * revocation's: the session-revoked signal over Redis, not the periodic check (every 30 s by
 * default). A stream of another grant of the same user stays open. Before, the identity carried
 * no session, so only the next periodic check ended it.
 */
import { protectedProcedure, router, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { dropTestKeys, testRedis } from '@ai-backend/test-utils/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMcpStream, within } from './helpers/mcpStream.js';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

const redisAt = await testRedis();
const ENCRYPTION_KEY = 'e2e-encryption-key-0123456789-abcdef';
const CLIENT_REDIRECT = 'http://127.0.0.1:8976/callback';
const keyPrefix = `oauth-stream-revoke-${process.pid}-${Date.now()}:`;

const whoami = router({
  whoami: protectedProcedure.meta({ description: 'Who is calling', mcp: {} }).query(({ ctx }) => ({ sub: ctx.identity.sub })),
});

function configFor(idp: TestIdp, port: number, publicUrl?: string): ConfigInput {
  return {
    host: '127.0.0.1',
    port,
    storage: { type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
    monitoring: { logging: { level: 'silent' } },
    mcp: { auth: { authType: 'oauth' } },
    customRouters: { e2e: whoami },
    // Sessions cached for a minute, streams checked every 30 s: only the signal can end a stream in time.
    limits: { streamCredentialCheckSec: 30 },
    oauth: {
      encryptionKey: ENCRYPTION_KEY,
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
      sessionCacheMs: 60_000,
      ...(publicUrl ? { publicUrl } : {}),
    },
  } as ConfigInput;
}

/** One grant: a client registers, the user signs in, the client gets its tokens. */
async function grant(base: string): Promise<MemoryOAuthProvider> {
  const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
  const serverUrl = new URL(`${base}/mcp`);
  expect(await auth(provider, { serverUrl })).toBe('REDIRECT');
  const { redirect } = await completeSignIn(provider.authorizationUrl!.href, 'alice');
  expect(await auth(provider, { serverUrl, authorizationCode: redirect.searchParams.get('code')! })).toBe('AUTHORIZED');
  return provider;
}

describe.skipIf(!redisAt.ok)('an OAuth grant revoked while a stream opened with its token is open', () => {
  let idp: TestIdp;
  const servers: AiBackendServer[] = [];
  let a: string;
  let b: string;
  beforeAll(async () => {
    idp = await startIdp();
    const first = createServer(configFor(idp, 0));
    servers.push(first);
    a = (await first.start()).url;
    idp.configure(`${a}/oauth/callback`);
    // Two instances behind one public address: B is told A's (publicUrl), the tokens' audience.
    const second = createServer(configFor(idp, 0, a));
    servers.push(second);
    b = (await second.start()).url;
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await idp?.close();
    await dropTestKeys(redisAt, keyPrefix);
  });

  it("ends that grant's stream at once, on another instance than the revocation; another grant's stream stays", async () => {
    const revoked = await grant(a);
    const kept = await grant(a);
    const gone = await openMcpStream(b, revoked.saved!.access_token);
    const stays = await openMcpStream(b, kept.saved!.access_token);
    try {
      expect(await within(gone.ended, 300)).toBe('open');
      const res = await fetch(`${a}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: revoked.saved!.refresh_token!, client_id: revoked.info!.client_id }),
      });
      expect(res.status).toBe(200);
      // About a second for the signal through Redis; the periodic check would take 30 s.
      expect(await within(gone.ended, 2_000)).toBe('ended');
      expect(await within(stays.ended, 500)).toBe('open');
    } finally {
      gone.close();
      stays.close();
    }
  });
});
