import type { Storage } from '../kernel/Storage.js';
import type { PromptRegistry } from '../services/prompts/PromptRegistry.js';
import type { ResourceRegistry } from '../services/resources/ResourceRegistry.js';

/**
 * What code outside the built-in namespaces uses of a running server: an embedder gets it from
 * `server.ready()`, a custom router's procedures from the `withServices` middleware (ctx.storage,
 * ctx.prompts, ctx.resources). The rest of the server stays behind its procedures.
 */
export interface AiBackendServices {
  /** The server's store (docs/storage.md); keep your records under a key prefix of your own. */
  readonly storage: Storage;
  /** MCP prompts: `register` and `unregister` at run time (docs/mcp.md, "Registering at run time"). */
  readonly prompts: PromptRegistry;
  /** MCP resources: `register`, `unregister`, `notifyUpdated` (docs/mcp.md, "Registering at run time"). */
  readonly resources: ResourceRegistry;
}
