import { provide } from '../../pipeline/provide.js';

/** What the auth namespace's procedures use, in their ctx: the key vault, provider checks and the user index. */
export const authServices = provide((r) => ({
  ai: r.ai,
  vault: r.vault,
  storage: r.storage,
  logger: r.logger,
  keyChecks: { config: r.config, storage: r.storage },
}));
