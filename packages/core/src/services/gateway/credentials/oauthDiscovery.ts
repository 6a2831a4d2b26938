import { CoreError } from '../../../kernel/CoreError.js';
import { bearerChallenge, getJson, jsonObject, postJson, type UpstreamNet } from './oauthHttp.js';

/** The parts of RFC 8414 / OpenID Connect discovery metadata the gateway uses. */
export interface AuthServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint?: string;
  revocation_endpoint?: string;
  scopes_supported?: string[];
  code_challenge_methods_supported?: string[];
  token_endpoint_auth_methods_supported?: string[];
  client_id_metadata_document_supported?: boolean;
  authorization_response_iss_parameter_supported?: boolean;
}

/** Where a user authorizes for one upstream: the resource, its authorization server, the scopes it asks for. */
export interface UpstreamAuth {
  /** The RFC 8707 resource indicator (the protected resource metadata's `resource`, else the server URL). */
  resource: string;
  as: AuthServerMetadata;
  /** From the 401 challenge's `scope`, else the metadata's `scopes_supported`. */
  scopes?: string[];
}

/** An absolute https URL (or http, when allowed) without credentials. */
function webUrl(value: unknown, allowHttp: boolean): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const u = new URL(value);
  return (u.protocol === 'https:' || (allowHttp && u.protocol === 'http:')) && !u.username && !u.password;
}

const strings = (v: unknown) => (Array.isArray(v) && v.every((s) => typeof s === 'string') ? (v as string[]) : undefined);

/** The URL without fragment and without a trailing slash on the path (how resources compare). */
export function canonicalResource(url: string): string {
  const u = new URL(url);
  u.hash = '';
  return u.href.replace(/\/$/, '');
}

/**
 * May tokens for `resource` be sent to `serverUrl`? Same origin, and the server's path within the
 * resource's (RFC 9728 §3.3: the metadata must be for the server we reach, or a parent of it).
 */
export function resourceCovers(resource: string, serverUrl: string): boolean {
  const r = new URL(canonicalResource(resource));
  const s = new URL(canonicalResource(serverUrl));
  if (r.origin !== s.origin) return false;
  const rp = r.pathname.replace(/\/$/, '');
  return s.pathname === rp || s.pathname.startsWith(`${rp}/`) || rp === '';
}

function wellKnown(base: URL, name: string): string[] {
  const path = base.pathname.replace(/\/$/, '');
  return path ? [`${base.origin}/.well-known/${name}${path}`] : [`${base.origin}/.well-known/${name}`];
}

/** Ask the upstream without credentials: its 401 names the protected resource metadata (RFC 9728 §5.1). */
async function probe(serverUrl: string, net: UpstreamNet): Promise<Record<string, string>> {
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ai-backend-gateway', version: '1' } },
  };
  try {
    const res = await postJson(serverUrl, init, net, { accept: 'application/json, text/event-stream' });
    return res.status === 401 ? bearerChallenge(res.headers.get('www-authenticate')) : {};
  } catch (err) {
    // A refused address is a configuration error to report; anything else falls back to the well-known URLs.
    if (err instanceof CoreError && err.appCode === 'FORBIDDEN') throw err;
    return {};
  }
}

async function protectedResource(serverUrl: string, challenge: Record<string, string>, net: UpstreamNet) {
  const server = new URL(serverUrl);
  const candidates = challenge.resource_metadata
    ? [challenge.resource_metadata]
    : [...wellKnown(server, 'oauth-protected-resource'), `${server.origin}/.well-known/oauth-protected-resource`];
  for (const url of [...new Set(candidates)]) {
    const res = await getJson(url, net).catch(() => undefined);
    const doc = res?.status === 200 ? jsonObject(res) : undefined;
    if (!doc) continue;
    const resource = typeof doc.resource === 'string' ? doc.resource : undefined;
    const servers = strings(doc.authorization_servers);
    if (!resource || !servers?.length)
      throw new CoreError('UPSTREAM_ERROR', "the upstream's protected resource metadata lacks resource or authorization_servers");
    if (!resourceCovers(resource, serverUrl))
      throw new CoreError('UPSTREAM_ERROR', `the upstream's protected resource metadata is for ${resource}, not for ${serverUrl}`);
    return { resource: canonicalResource(resource), issuer: servers[0]!, scopes: strings(doc.scopes_supported) };
  }
  return undefined;
}

/** RFC 8414 §3 and OpenID Connect discovery, path-aware, in the order the MCP specification gives. */
async function authServerMetadata(issuer: string, net: UpstreamNet): Promise<AuthServerMetadata> {
  const base = new URL(issuer);
  const path = base.pathname.replace(/\/$/, '');
  const candidates = path
    ? [
        `${base.origin}/.well-known/oauth-authorization-server${path}`,
        `${base.origin}/.well-known/openid-configuration${path}`,
        `${base.origin}${path}/.well-known/openid-configuration`,
      ]
    : [`${base.origin}/.well-known/oauth-authorization-server`, `${base.origin}/.well-known/openid-configuration`];
  for (const url of candidates) {
    const res = await getJson(url, net).catch(() => undefined);
    const doc = res?.status === 200 ? jsonObject(res) : undefined;
    if (!doc) continue;
    // RFC 8414 §3.3: the issuer in the document must be the one we asked about (mix-up defence).
    if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/$/, '') !== issuer.replace(/\/$/, '')) {
      throw new CoreError('UPSTREAM_ERROR', `the authorization server metadata at ${url} names another issuer`);
    }
    if (typeof doc.authorization_endpoint !== 'string' || typeof doc.token_endpoint !== 'string')
      throw new CoreError('UPSTREAM_ERROR', `the authorization server metadata of ${issuer} lacks its endpoints`);
    // The authorization URL goes to our users' browsers and apps (which may hand it to the OS to open), and the others
    // are fetched: https URLs only (plain http where private networks are allowed), never javascript:, file: or an
    // app's own scheme, which an upstream could use to run something where the URL is opened.
    for (const field of ['authorization_endpoint', 'token_endpoint', 'revocation_endpoint', 'registration_endpoint'] as const) {
      const value = doc[field];
      if (value === undefined && (field === 'revocation_endpoint' || field === 'registration_endpoint')) continue;
      if (!webUrl(value, net.allowPrivateNetwork))
        throw new CoreError(
          'UPSTREAM_ERROR',
          `the authorization server metadata of ${issuer}: its ${field} is not an https URL (http only where private networks are allowed)`,
        );
    }
    const challenge = strings(doc.code_challenge_methods_supported);
    // MCP 2025-11-25: a client must refuse an authorization server that does not say it supports S256.
    if (!challenge?.includes('S256'))
      throw new CoreError('UPSTREAM_ERROR', `the authorization server ${issuer} does not advertise PKCE S256`);
    return doc as unknown as AuthServerMetadata;
  }
  throw new CoreError('UPSTREAM_ERROR', `no authorization server metadata found for ${issuer}`);
}

/**
 * Find who authorizes access to an upstream MCP server: its 401 challenge or well-known protected
 * resource metadata (RFC 9728), then its authorization server's metadata. Without protected
 * resource metadata the server's origin is taken as the authorization server (MCP 2025-03-26).
 */
export async function discoverUpstreamAuth(serverUrl: string, net: UpstreamNet): Promise<UpstreamAuth> {
  const challenge = await probe(serverUrl, net);
  const prm = await protectedResource(serverUrl, challenge, net);
  const issuer = prm?.issuer ?? new URL(serverUrl).origin;
  const as = await authServerMetadata(issuer, net);
  const scopes = challenge.scope ? challenge.scope.split(/\s+/).filter(Boolean) : (prm?.scopes ?? undefined);
  return { resource: prm?.resource ?? canonicalResource(serverUrl), as, ...(scopes?.length ? { scopes } : {}) };
}
