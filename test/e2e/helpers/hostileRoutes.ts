/** Routes and config shared by the hostile-input tests (in-process, listening, spawned server). */
import { request as httpRequest } from 'node:http';
import type { ConfigInput } from '@ai-backend/core';

/** Every route family the edge guards, on one server (OAuth and the webhook switched on). */
export const HOSTILE_CONFIG: ConfigInput = {
  mcp: { auth: { authType: 'oauth' } },
  oauth: {
    encryptionKey: 'hostile-input-encryption-key-0123456789',
    providerClientId: 'hostile-client',
    providerClientSecret: 'hostile-secret',
    provider: {
      authorizationUrl: 'https://idp.invalid/authorize',
      tokenUrl: 'https://idp.invalid/token',
      userinfoUrl: 'https://idp.invalid/userinfo',
    },
  },
  billing: { webhookSecret: 'hostile-webhook-secret-0123456789abcdef' },
};

export interface RouteCase {
  path: string;
  /** A body the route accepts in form (content type and shape). */
  body: string;
  contentType: string;
  /** POSTs only as application/json. */
  jsonOnly: boolean;
  /** Its body limit with HOSTILE_CONFIG. */
  limit: number;
  headers?: Record<string, string>;
}

const MIB = 1024 * 1024;
export const ROUTES: RouteCase[] = [
  {
    path: '/rpc',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }),
    contentType: 'application/json',
    jsonOnly: true,
    limit: MIB,
  },
  {
    path: '/trpc/system.writeFile',
    body: JSON.stringify({ json: { path: 'x.txt', content: 'x' } }),
    contentType: 'application/json',
    jsonOnly: true,
    limit: MIB,
  },
  {
    path: '/typedrpc/system.writeFile',
    body: JSON.stringify({ json: { path: 'x.txt', content: 'x' } }),
    contentType: 'application/json',
    jsonOnly: true,
    limit: MIB,
  },
  {
    path: '/mcp',
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
    contentType: 'application/json',
    jsonOnly: true,
    limit: MIB,
    headers: { accept: 'application/json, text/event-stream' },
  },
  {
    path: '/register',
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'x' }),
    contentType: 'application/json',
    jsonOnly: false,
    limit: 64 * 1024,
  },
  {
    path: '/oauth/token',
    body: 'grant_type=authorization_code&code=x&code_verifier=y&client_id=z',
    contentType: 'application/x-www-form-urlencoded',
    jsonOnly: false,
    limit: 64 * 1024,
  },
  {
    path: '/webhooks/purchase',
    body: JSON.stringify({ id: 'evt', type: 'purchase' }),
    contentType: 'application/json',
    jsonOnly: false,
    limit: 64 * 1024,
  },
];

/** Text that must never reach a caller: stack frames, library names and URLs, engine messages. */
export const LEAK =
  /\bat [\w.<>]+ \(|node_modules|Maximum call stack|superjson|zod|hono|@trpc|trpc\.io|github\.com|TypeError|SyntaxError|\.(ts|js|mjs):\d+/i;

/** A POST with headers fetch will not send as given (Host), over node:http. */
export function rawPost(
  base: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path, method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
