export { AiService, type AiServiceOptions, type ProviderCallStats, type RegistryHealth } from './AiService.js';
export { ProviderRegistry, DEFAULT_BASE_URLS, type ProviderSummary } from './ProviderRegistry.js';
export { ModelRegistry, type ModelInfo, type RegistrySource } from './ModelRegistry.js';
export { SystemPromptStore, type ResolvedSystemPrompt } from './SystemPromptStore.js';
export { mapUpstreamError, type UpstreamFailureReason, type UpstreamErrorContext } from './mapUpstreamError.js';
export { validateProviderKey, type KeyValidation, type ValidateKeyOptions } from './validateProviderKey.js';
export { estimateTokens, type GenerateTextInput, type GenerateTextCall, type GenerateTextOutput } from './runGenerateText.js';
export { PROVIDER_ALIASES, ProviderInput, KeyProviderInput, KEY_PROVIDER_IDS, type KeyProviderId } from './providerIds.js';
export type { Metering, MeteringDecision, Reservation, SettledUsage, UsageMetadata } from './Metering.js';
