import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../config/schema.js';
import type { Logger } from '../kernel/Logger.js';
import type { Runtime } from '../runtime/Runtime.js';
import type { AiService } from '../services/ai/AiService.js';
import { RequestScope, type RequestFacts } from './requestScope.js';

/**
 * What an entry point (/trpc, /rpc, /mcp, a /v1 wire format) needs from core, and no more: the
 * resolved config, the logger, the router its calls go to, and a request scope per HTTP request
 * (the credential verified once, the access decisions, the context the calls run with). The
 * transports get this instead of the runtime, so an entry point cannot reach a service past the
 * procedures that own it.
 */
export interface EntryGateway {
  readonly config: ResolvedConfig;
  readonly logger: Logger;
  /** The application router, every namespace loaded. */
  readonly router: AnyRouter;
  /** Open the scope of one HTTP request (RequestScope.open): the one place its credential is verified. */
  openScope(facts: RequestFacts): Promise<RequestScope>;
  /** The model a call would go to after every model rule (count_tokens checks a request without calling); throws as a call would. */
  checkCallModel: AiService['checkCallModel'];
}

const gateways = new WeakMap<Runtime, EntryGateway>();

/** The entry gateway of a runtime (one per runtime, made on first use). */
export function entryGateway(runtime: Runtime): EntryGateway {
  let gateway = gateways.get(runtime);
  if (!gateway) {
    gateway = {
      config: runtime.config,
      logger: runtime.logger,
      router: runtime.router,
      // Bound, not wrapped: a call runs no code of this file (bench/callPathFiles.mjs counts the files a call crosses).
      openScope: RequestScope.open.bind(RequestScope, runtime),
      checkCallModel: runtime.ai.checkCallModel.bind(runtime.ai),
    };
    gateways.set(runtime, gateway);
  }
  return gateway;
}
