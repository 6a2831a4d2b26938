import { createHash, randomBytes } from 'node:crypto';
import { CoreError } from '../../../kernel/CoreError.js';
import type { Storage } from '../../../kernel/Storage.js';
import type { Sealed } from '../../vault/vaultCrypto.js';
import type { CredentialStore, OAuthGrant } from './CredentialStore.js';
import { discoverUpstreamAuth, type AuthServerMetadata } from './oauthDiscovery.js';
import { pkcePair, registerClient, tokenRequest, type OAuthClient } from './oauthClient.js';
import type { UpstreamNet } from './oauthHttp.js';
import type { PerUserServer } from './perUserServers.js';

/** Where the upstream's authorization server sends the user back, and our client metadata document. */
export interface CallbackUrls {
  redirectUri: string;
  /** Our client ID metadata document's URL: used as client_id where the server supports that and it is https. */
  clientMetadataUrl: string;
}

/** A pending authorization, stored under the hash of its state until the callback (single use). */
interface PendingAuthorization {
  userId: string;
  server: string;
  serverUrl: string;
  issuer: string;
  issParameter: boolean;
  tokenEndpoint: string;
  revocationEndpoint?: string;
  resource: string;
  redirectUri: string;
  clientId: string;
  tokenEndpointAuthMethod: string;
  /** The PKCE verifier and any client secret. */
  sealed: Sealed;
  expiresAt: number;
}

interface StoredClient {
  clientId: string;
  tokenEndpointAuthMethod: string;
  sealedSecret?: Sealed;
}

const stateKey = (state: string) => `gwauth:${createHash('sha256').update(state).digest('base64url')}`;
const clientKey = (server: string, issuer: string, redirectUri: string) =>
  `gwclient:${server}:${createHash('sha256').update(`${issuer}\n${redirectUri}`).digest('base64url')}`;

export const netOf = (s: PerUserServer): UpstreamNet => ({
  allowPrivateNetwork: s.allowPrivateNetwork,
  timeoutMs: Math.min(s.timeoutMs, 30_000),
});

/** The OAuth 2.1 authorization code flow to an upstream, with us as the client (gateway.connect and its callback). */
export class AuthorizationFlow {
  constructor(
    private readonly storage: Storage,
    private readonly store: CredentialStore,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** Our client at this authorization server: configured, our metadata document, or registered once and kept. */
  private async client(server: PerUserServer, as: AuthServerMetadata, urls: CallbackUrls): Promise<OAuthClient> {
    if (server.oauth?.clientId) {
      const secret = server.oauth.clientSecret;
      const method = secret
        ? as.token_endpoint_auth_methods_supported?.includes('client_secret_basic') === false
          ? 'client_secret_post'
          : 'client_secret_basic'
        : 'none';
      return { clientId: server.oauth.clientId, ...(secret ? { clientSecret: secret } : {}), tokenEndpointAuthMethod: method };
    }
    // A client ID metadata document must be fetched by the authorization server over https.
    if (as.client_id_metadata_document_supported && urls.clientMetadataUrl.startsWith('https://'))
      return { clientId: urls.clientMetadataUrl, tokenEndpointAuthMethod: 'none' };
    const key = clientKey(server.name, as.issuer, urls.redirectUri);
    const known = await this.storage.get<StoredClient>(key);
    if (known) {
      const secret = known.sealedSecret ? this.store.openValue<string>(known.sealedSecret, key) : undefined;
      if (!known.sealedSecret || secret)
        return {
          clientId: known.clientId,
          tokenEndpointAuthMethod: known.tokenEndpointAuthMethod,
          ...(secret ? { clientSecret: secret } : {}),
        };
    }
    const client = await registerClient(as, urls.redirectUri, netOf(server));
    await this.storage.set<StoredClient>(key, {
      clientId: client.clientId,
      tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
      ...(client.clientSecret ? { sealedSecret: this.store.sealValue(client.clientSecret, key) } : {}),
    });
    return client;
  }

  /** Discover, register if needed, and return the URL the user opens to authorize us at the upstream. */
  async start(userId: string, server: PerUserServer, urls: CallbackUrls): Promise<{ authorizationUrl: string; expiresAt: string }> {
    this.store.assertConfigured(); // before any network call
    const auth = await discoverUpstreamAuth(server.url, netOf(server));
    const client = await this.client(server, auth.as, urls);
    const { verifier, challenge } = pkcePair();
    const state = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    const key = stateKey(state);
    const pending: PendingAuthorization = {
      userId,
      server: server.name,
      serverUrl: server.url,
      issuer: auth.as.issuer,
      issParameter: auth.as.authorization_response_iss_parameter_supported === true,
      tokenEndpoint: auth.as.token_endpoint,
      ...(auth.as.revocation_endpoint ? { revocationEndpoint: auth.as.revocation_endpoint } : {}),
      resource: auth.resource,
      redirectUri: urls.redirectUri,
      clientId: client.clientId,
      tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
      sealed: this.store.sealValue({ verifier, clientSecret: client.clientSecret }, key),
      expiresAt,
    };
    await this.storage.set(key, pending, { ttlMs: this.ttlMs });
    const url = new URL(auth.as.authorization_endpoint);
    const scopes = server.oauth?.scopes ?? auth.scopes;
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: urls.redirectUri,
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: auth.resource,
      ...(scopes?.length ? { scope: scopes.join(' ') } : {}),
    };
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return { authorizationUrl: url.href, expiresAt: new Date(expiresAt).toISOString() };
  }

  /**
   * The callback: the state must be one we issued, unused and unexpired; the code is exchanged
   * (with the PKCE verifier and the resource) and the tokens stored encrypted for the user who
   * asked. Returns whose authorization it was, for the page the browser shows.
   */
  async complete(
    params: { state?: string; code?: string; error?: string; iss?: string },
    net: (serverName: string) => UpstreamNet,
  ): Promise<{ userId: string; server: string }> {
    if (!params.state) throw new CoreError('BAD_REQUEST', 'the callback has no state');
    const key = stateKey(params.state);
    const pending = await this.storage.get<PendingAuthorization>(key);
    // Single use: only the caller whose delete removed the record goes on.
    if (!pending || !(await this.storage.delete(key)))
      throw new CoreError('BAD_REQUEST', 'this authorization is unknown or was already used: call gateway.connect again');
    if (pending.expiresAt < this.now()) throw new CoreError('BAD_REQUEST', 'this authorization has expired: call gateway.connect again');
    // RFC 9207: the iss parameter must name the server we sent the user to (mix-up defence).
    if (params.iss !== undefined ? params.iss !== pending.issuer : pending.issParameter)
      throw new CoreError('BAD_REQUEST', 'the authorization response comes from another authorization server');
    if (params.error) throw new CoreError('ACCESS_DENIED', `the authorization server refused: ${params.error.slice(0, 64)}`);
    if (!params.code) throw new CoreError('BAD_REQUEST', 'the callback has no code');
    const secrets = this.store.openValue<{ verifier: string; clientSecret?: string }>(pending.sealed, key);
    if (!secrets) throw new CoreError('INTERNAL', 'the pending authorization cannot be decrypted');
    const client: OAuthClient = {
      clientId: pending.clientId,
      tokenEndpointAuthMethod: pending.tokenEndpointAuthMethod,
      ...(secrets.clientSecret ? { clientSecret: secrets.clientSecret } : {}),
    };
    const answer = await tokenRequest(
      pending.tokenEndpoint,
      client,
      {
        grant_type: 'authorization_code',
        code: params.code,
        redirect_uri: pending.redirectUri,
        code_verifier: secrets.verifier,
        resource: pending.resource,
      },
      net(pending.server),
      this.now(),
    );
    if (!answer.ok)
      throw new CoreError('ACCESS_DENIED', 'the authorization server did not accept the authorization code: call gateway.connect again');
    const grant: OAuthGrant = {
      kind: 'oauth',
      ...answer.tokens,
      issuer: pending.issuer,
      tokenEndpoint: pending.tokenEndpoint,
      resource: pending.resource,
      clientId: client.clientId,
      ...(client.clientSecret ? { clientSecret: client.clientSecret } : {}),
      tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
      ...(pending.revocationEndpoint ? { revocationEndpoint: pending.revocationEndpoint } : {}),
    };
    await this.store.put(pending.userId, pending.server, grant);
    return { userId: pending.userId, server: pending.server };
  }
}
