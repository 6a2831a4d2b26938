export { ConfigSchema, defineConfig, type ConfigInput, type ResolvedConfig } from './schema.js';
export { resolveConfig, checkConfig, isResolvedConfig, ConfigError, type ConfigProblem } from './resolveConfig.js';
export { attributeToEnv, configFromEnv, mergeConfig } from './fromEnv.js';
export { redactConfig } from './redact.js';
export { PROVIDER_IDS, type ProviderId, type ProviderConfig } from './sections/ai.js';
export { WorkspaceConfigSchema, type WorkspaceConfig, type WorkspaceConfigInput } from './sections/workspaces.js';
export { isLoopbackHost, oauthConfigProblems, oauthSessionFile, oauthServerEnabled, servesWithoutAuth } from './authMode.js';
export { unusableAuthWarning } from './authWarnings.js';
