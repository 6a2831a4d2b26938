import { z } from '../../lib/zod.js';
import { PROVIDER_IDS, type ProviderId } from '../../config/sections/ai.js';
import { PROVIDER_ALIASES, unaliasProvider } from '../../config/sections/aiProviders.js';

/**
 * Input schema for the spec's four-value provider enum; aliases map to the real ids. It stays
 * exactly the spec's enum: named providers are chosen with a `model` reference (`<id>/<model>`).
 */
export const ProviderInput = z.preprocess(unaliasProvider, z.enum(PROVIDER_IDS));

/** The spec's three-value enum (key management, ai.validateProvider): anthropic, openai, google. */
export const KEY_PROVIDER_IDS = ['anthropic', 'openai', 'google'] as const;
export type KeyProviderId = (typeof KEY_PROVIDER_IDS)[number];
export const KeyProviderInput = z.preprocess(unaliasProvider, z.enum(KEY_PROVIDER_IDS));

export { PROVIDER_ALIASES, PROVIDER_IDS, type ProviderId };
