import { provide } from '../../pipeline/provide.js';

/** What the ai namespace's procedures use, in their ctx: the AI service, and the key-check counter's config and store. */
export const aiServices = provide((r) => ({ ai: r.ai, keyChecks: { config: r.config, storage: r.storage } }));
