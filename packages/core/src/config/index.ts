export { ConfigSchema, defineConfig, type ConfigInput, type ResolvedConfig } from './schema.js';
export { resolveConfig, checkConfig, isResolvedConfig, ConfigError, type ConfigProblem } from './resolveConfig.js';
export { attributeToEnv, configFromEnv, mergeConfig } from './fromEnv.js';
export { redactConfig } from './redact.js';
export { PROVIDER_IDS, NAMED_PROVIDER_TYPES, type ProviderId, type BuiltinProviderId, type ProviderConfig, type NamedProviderConfig, type NamedProviderType } from './sections/ai.js';
export type { ProvidersInput } from './sections/aiProviders.js';
export { WorkspaceConfigSchema, type WorkspaceConfig, type WorkspaceConfigInput } from './sections/workspaces.js';
export { isLoopbackHost, oauthConfigProblems, oauthSessionFile, oauthServerEnabled, servesWithoutAuth } from './authMode.js';
export { unusableAuthWarning } from './authWarnings.js';
