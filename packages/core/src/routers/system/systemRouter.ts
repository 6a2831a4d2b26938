import { z } from '../../lib/zod.js';
import { router } from '../../pipeline/init.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { systemServices } from './systemServices.js';
import { checkHealth, healthFor } from '../../runtime/checkHealth.js';
import { clientWorkspaceProcedures } from './clientWorkspaceProcedures.js';
import { workspaceProcedures } from './workspaceProcedures.js';

/** The system namespace's public procedures, with its services in ctx. */
const systemProcedure = publicProcedure.use(systemServices);

export const systemRouter = router({
  health: systemProcedure
    .meta({
      keyAccess: 'any',
      description: 'Health of the server and its dependencies',
      mcp: { name: 'health', public: true, annotations: { readOnlyHint: true } },
    })
    .query(async ({ ctx }) => healthFor(await checkHealth(ctx), ctx.identity?.isAdmin === true ? 'admin' : 'public')),

  test: systemProcedure
    .meta({
      keyAccess: 'any',
      description: 'Echo a message (connectivity test)',
      mcp: { name: 'test', public: true, annotations: { readOnlyHint: true } },
    })
    .input(z.lazy(() => z.object({ message: z.string().max(10_000).default('test') }).default({ message: 'test' })))
    .query(({ input }) => ({ message: input.message })),

  ...workspaceProcedures,
  ...clientWorkspaceProcedures,
});
