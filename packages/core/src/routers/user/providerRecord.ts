import { z } from '../../lib/zod.js';
import { KEY_PROVIDER_IDS, KeyProviderInput, type KeyProviderId } from '../../services/ai/providerIds.js';

/**
 * A record keyed by provider (anthropic, openai, google or the aliases provider_a..c). Keys
 * are normalised to the real ids; an unknown provider is an input error naming the allowed ones.
 */
export function providerRecord<T extends z.ZodType>(value: T) {
  return z.record(z.string(), value).transform((rec, ctx) => {
    const out: Partial<Record<KeyProviderId, z.output<T>>> = {};
    for (const [k, v] of Object.entries(rec)) {
      const id = KeyProviderInput.safeParse(k);
      if (!id.success) {
        ctx.issues.push({
          code: 'custom',
          input: k,
          path: [k],
          message: `unknown provider "${k.slice(0, 50)}"; allowed: ${KEY_PROVIDER_IDS.join(', ')}`,
        });
        continue;
      }
      out[id.data] = v as z.output<T>;
    }
    return out;
  });
}

/** An API key as accepted from users: trimmed, 8..512 printable characters. */
export const ApiKeyInput = z
  .string()
  .trim()
  .min(8, 'apiKey must be at least 8 characters')
  .max(512, 'apiKey must be at most 512 characters')
  .regex(/^[\x21-\x7e]+$/, 'apiKey must be printable ASCII without spaces');
