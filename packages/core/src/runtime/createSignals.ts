import type { ResolvedConfig } from '../config/schema.js';
import type { Logger } from '../kernel/Logger.js';
import { LocalSignals, type Signals } from '../kernel/Signals.js';

/** Topic of admin.clearCache; the message is its target ('all', 'memory', 'tokens', ...). */
export const CLEAR_CACHES = 'caches.clear';

/** Redis pub/sub when the deployment has a Redis (store or shared state), else this process only. */
export async function createSignals(config: ResolvedConfig, logger: Logger): Promise<Signals> {
  // `storage.redis` exists only when the store or its shared state is Redis (the schema's union).
  const redis = config.storage.redis;
  if (!redis) return new LocalSignals();
  const { RedisSignals } = await import('./RedisSignals.js');
  return RedisSignals.connect(redis, logger);
}
