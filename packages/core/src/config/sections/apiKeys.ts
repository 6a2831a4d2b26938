import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';

/**
 * `apiKeys`: long-lived `aib_…` keys that users create for their apps (docs/api-keys.md).
 * Keys are stored only as an HMAC-SHA256 under `secret`; without a secret (here, or one of
 * `jwt.secret`, `oauth.encryptionKey`, `billing.vaultKey` to derive it from) keys are off.
 */
export const ApiKeysSchema = lazySection('apiKeys', () =>
  z.strictObject({
    /** Keys can be created and used. Default true (they still need a secret, see above). */
    enabled: z.boolean().default(true),
    /**
     * HMAC key the stored key hashes are made with; at least 32 bytes. Default: derived (HKDF) from
     * `jwt.secret`, else `oauth.encryptionKey`, else `billing.vaultKey`. Changing it invalidates every key.
     */
    secret: z
      .string()
      .refine((s) => Buffer.byteLength(s) >= 32, 'must be at least 32 bytes')
      .optional(),
    /** Keys one user may hold (revoked ones not counted). Default 100. */
    maxPerUser: z.number().int().min(1).max(10_000).default(100),
    /**
     * How long an old key keeps working after `keys.rotate` when the caller asks for no grace of its
     * own, in seconds. Default 0: the old key stops at once. At most 7 days.
     */
    defaultRotateGraceSec: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .default(0),
  }),
);
