/**
 * Tokens never reach logs or answers: a whole OAuth life (registration with a secret, sign-in at
 * oidc-provider, code exchange, tool calls, refresh, a replayed refresh token, a token in the
 * query string, a forged token, revocation) with every log line kept (debug level) and the
 * security log written to a file. None of them, nor any error answer, holds a code, a token,
 * a PKCE verifier or the client secret.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { protectedProcedure, router } from '@ai-backend/core';
import type { Logger } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';
import { expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, startIdp } from './oauthHelpers.js';

const whoami = router({
  whoami: protectedProcedure.meta({ description: 'Who is calling', mcp: {} }).query(({ ctx }) => ({ sub: ctx.identity.sub })),
});

it('no code, token, verifier or client secret in any log line or error answer', async () => {
  const lines: string[] = [];
  const keep = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const logger: Logger = { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
  const dir = await mkdtemp(join(tmpdir(), 'oauth-secrets-'));
  const idp = await startIdp();
  const server = createServer(
    {
      host: '127.0.0.1',
      port: 0,
      storage: { type: 'memory' },
      monitoring: { logging: { level: 'debug' } },
      mcp: {
        auth: { authType: 'oauth' },
        securityLogging: { enabled: true, logLevel: 'debug', logToFile: true, logFilePath: join(dir, 'security.log') },
      },
      customRouters: { e2e: whoami },
      oauth: {
        encryptionKey: 'e2e-encryption-key-0123456789-abcdef',
        providerClientId: IDP_CLIENT_ID,
        providerClientSecret: IDP_CLIENT_SECRET,
        provider: { issuer: idp.issuer },
      },
    },
    { logger },
  );
  const secrets: string[] = [IDP_CLIENT_SECRET];
  const answers: string[] = [];
  try {
    const base = (await server.start()).url;
    idp.configure(`${base}/oauth/callback`);
    const post = async (path: string, body: Record<string, string>, headers: Record<string, string> = {}) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(body).toString(),
      });
      const text = await res.text();
      if (res.status >= 400) answers.push(`${res.headers.get('www-authenticate') ?? ''} ${text}`);
      return { status: res.status, text };
    };
    const redirect = 'http://127.0.0.1:8976/callback';
    const reg = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirect], client_name: 'secrets', token_endpoint_auth_method: 'client_secret_post' }),
    }).then((r) => r.json());
    secrets.push(reg.client_secret);
    const verifier = randomBytes(32).toString('base64url');
    secrets.push(verifier);
    const authorize = new URL(`${base}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: reg.client_id,
      redirect_uri: redirect,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'st',
      resource: `${base}/mcp`,
    }))
      authorize.searchParams.set(k, v);
    const code = (await completeSignIn(authorize.href, 'alice')).redirect.searchParams.get('code')!;
    secrets.push(code);
    const client = { client_id: reg.client_id, client_secret: reg.client_secret };
    const first = JSON.parse(
      (await post('/oauth/token', { grant_type: 'authorization_code', code, redirect_uri: redirect, code_verifier: verifier, ...client }))
        .text,
    );
    secrets.push(first.access_token, first.refresh_token);
    // The code again (replay), a wrong secret, a forged token, a token in the query string.
    expect(
      (await post('/oauth/token', { grant_type: 'authorization_code', code, redirect_uri: redirect, code_verifier: verifier, ...client }))
        .status,
    ).toBe(400);
    const tool = (token: string, path = '/mcp') =>
      post(
        path,
        {},
        { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      );
    const forged = `${first.access_token.slice(0, -4)}AAAA`;
    secrets.push(forged);
    expect((await tool(forged)).status).toBe(401);
    expect((await post(`/mcp?access_token=${first.access_token}`, {}, { 'content-type': 'application/json' })).status).toBe(401);
    expect((await post('/rpc', {}, { authorization: `Bearer ${forged}`, 'content-type': 'application/json' })).status).toBeLessThan(500);

    // A second sign-in: refresh, replay the used refresh token, revoke.
    const code2 = (await completeSignIn(authorize.href, 'alice')).redirect.searchParams.get('code')!;
    secrets.push(code2);
    const second = JSON.parse(
      (
        await post('/oauth/token', {
          grant_type: 'authorization_code',
          code: code2,
          redirect_uri: redirect,
          code_verifier: verifier,
          ...client,
        })
      ).text,
    );
    secrets.push(second.access_token, second.refresh_token);
    const refreshed = JSON.parse(
      (await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: second.refresh_token, ...client })).text,
    );
    secrets.push(refreshed.access_token, refreshed.refresh_token);
    expect((await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: second.refresh_token, ...client })).status).toBe(400);
    expect((await tool(refreshed.access_token)).status).toBe(401); // the family was revoked
    expect(
      (
        await post('/oauth/token', {
          grant_type: 'refresh_token',
          refresh_token: refreshed.refresh_token,
          client_id: reg.client_id,
          client_secret: 'wrong',
        })
      ).status,
    ).toBe(401);
    expect((await post('/oauth/revoke', { token: refreshed.access_token, ...client })).status).toBe(200);
    expect((await fetch(`${base}/oauth/userinfo`, { headers: { authorization: `Bearer ${forged}` } })).status).toBe(401);
  } finally {
    await server.stop();
    await idp.close();
  }
  const securityLog = await readFile(join(dir, 'security.log'), 'utf8').catch(() => '');
  await rm(dir, { recursive: true, force: true });
  expect(lines.some((l) => l.includes('session_revoked'))).toBe(true);
  expect(securityLog).toContain('auth_failed');
  for (const secret of secrets.filter(Boolean)) {
    // Long enough to be the secret, not a coincidence: a JWT's header alone is shared by every token.
    const probe = secret.length > 60 ? secret.slice(-40) : secret;
    const places: Array<[string, string]> = [
      ['log', lines.join('\n')],
      ['security log', securityLog],
      ['answers', answers.join('\n')],
    ];
    for (const [where, text] of places) expect(text.includes(probe), `${where} holds a secret`).toBe(false);
  }
}, 60_000);
