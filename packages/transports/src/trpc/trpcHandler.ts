import type { Handler } from 'hono';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { logWireError, toWireError, type Runtime } from '@ai-backend/core/internal';
import { openScope } from '../http/requestContext.js';

/**
 * /trpc and /typedrpc: tRPC's own fetch adapter over the shared router, so tRPC clients get
 * exactly what they expect (batching, superjson, GET queries). Headers an error asks for
 * (Retry-After, WWW-Authenticate) are copied onto the response.
 */
export function trpcHandler(getRuntime: () => Promise<Runtime>, endpoint: string): Handler {
  return async (c) => {
    const runtime = await getRuntime();
    return fetchRequestHandler({
      // When mounted under a prefix (app.route('/api', server.app)), the endpoint is the matched route.
      endpoint: c.req.routePath.endsWith('/*') ? c.req.routePath.slice(0, -2) : endpoint,
      req: c.req.raw,
      router: runtime.router,
      maxBatchSize: runtime.config.limits.maxBatchSize,
      createContext: async () => (await openScope(c, runtime, 'trpc')).context(),
      responseMeta({ errors }) {
        // Only build headers when an error asks for some: most responses need none.
        if (errors.length === 0) return {};
        const headers = new Headers();
        for (const e of errors) for (const [k, v] of Object.entries(toWireError(e).headers ?? {})) headers.set(k, v);
        return { headers };
      },
      onError({ error, path }) {
        logWireError(runtime.logger, toWireError(error), { transport: 'trpc', path });
      },
    });
  };
}
