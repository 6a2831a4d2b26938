export { UpstreamCredentials, type UpstreamCredentialsOptions, type ResolvedCredentials } from './UpstreamCredentials.js';
export type { CredentialStatus } from './CredentialStore.js';
export type { CallbackUrls } from './authorizationFlow.js';
export { perUserServersFrom, perUserServersFromConfig, type PerUserServer, type PerUserServerLookup } from './perUserServers.js';
