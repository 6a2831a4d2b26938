export { ConfigSchema, defineConfig, type ConfigInput, type ResolvedConfig } from './schema.js';
export { resolveConfig, checkConfig, isResolvedConfig, ConfigError, type ConfigProblem } from './resolveConfig.js';
export { attributeToEnv, configFromEnv, expandMcpServerVariables, mergeConfig } from './fromEnv.js';
export { ENV_VARIABLES, type EnvVariable } from './envVariables.js';
export { redactConfig } from './redact.js';
export {
  PROVIDER_IDS,
  NAMED_PROVIDER_TYPES,
  type ProviderId,
  type BuiltinProviderId,
  type ProviderConfig,
  type NamedProviderConfig,
  type NamedProviderType,
} from './sections/ai.js';
export type { ProvidersInput } from './sections/aiProviders.js';
export { STORAGE_BACKENDS } from './sections/storage.js';
export { WorkspaceConfigSchema, type WorkspaceConfig, type WorkspaceConfigInput } from './sections/workspaces.js';
export { isLoopbackHost, oauthConfigProblems, oauthSessionFile } from './authMode.js';
export { verifies, type AuthVerifiers, type AuthMode, type OAuthServerState, type ResolvedAuth } from './resolveAuth.js';
export { unusableAuthWarning } from './authWarnings.js';
export {
  importOptional,
  installCommand,
  isInstalled,
  missingPackages,
  neededPackages,
  OPTIONAL_PACKAGES,
  type NeededPackage,
  type OptionalPackage,
} from './optionalPackages.js';
