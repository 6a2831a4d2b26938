import type { Handler } from 'hono';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { logWireError, toWireError, type Runtime } from '@ai-backend/core/internal';
import { withCorsHeaders } from '../http/cors.js';
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
        // The CORS headers go into the Response tRPC builds: setting them on it afterwards (the
        // cors middleware's fallback) cost about a sixth of this route's CPU in bench/trpcPath.mjs.
        const record: Record<string, string> = withCorsHeaders(c, {});
        // Headers an error asks for (Retry-After, WWW-Authenticate).
        for (const e of errors) Object.assign(record, toWireError(e).headers);
        // A plain record: tRPC v11 sets its entries on the response's Headers, and building a
        // Headers object of our own only to have it copied cost a few µs per request
        // (bench/trpcPath.mjs). tRPC marks the record form for removal in v12.
        for (const _ in record) return { headers: record };
        return {};
      },
      onError({ error, path }) {
        logWireError(runtime.logger, toWireError(error), { transport: 'trpc', path });
      },
    });
  };
}
