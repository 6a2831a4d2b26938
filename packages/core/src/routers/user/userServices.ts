import { provide } from '../../pipeline/provide.js';

/** What the user namespace's procedures use, in their ctx: the caller's preferences, balances and keys. */
export const userServices = provide((r) => ({ ai: r.ai, billing: r.billing, vault: r.vault, storage: r.storage, logger: r.logger }));
