import { z } from '../../lib/zod.js';
import { router } from '../../pipeline/init.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { checkHealth, healthFor } from '../../runtime/checkHealth.js';
import { clientWorkspaceProcedures } from './clientWorkspaceProcedures.js';
import { workspaceProcedures } from './workspaceProcedures.js';

export const systemRouter = router({
  health: publicProcedure
    .meta({
      keyAccess: 'any',
      description: 'Health of the server and its dependencies',
      mcp: { name: 'health', public: true, annotations: { readOnlyHint: true } },
    })
    .query(async ({ ctx }) => healthFor(await checkHealth(ctx.runtime), ctx.identity?.isAdmin === true)),

  test: publicProcedure
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
