import { provide } from '../../pipeline/provide.js';

/** What the billing namespace's procedures use, in their ctx (ai prices the previews; keys split spend by key). */
export const billingServices = provide((r) => ({ billing: r.billing, ai: r.ai, keys: r.keys, logger: r.logger }));
