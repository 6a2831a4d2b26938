import { z } from '../../lib/zod.js';
import { router } from '../../pipeline/init.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { readResourceAs, resourceReader } from '../../pipeline/resourceAccess.js';
import { mcpServices } from './mcpServices.js';
import { apiDocumentationPrompt, codeReviewPrompt, explainConceptPrompt, incidentResponsePrompt } from './prompts.js';

const GREETINGS = { en: 'Hello', es: 'Hola', fr: 'Bonjour', de: 'Hallo' } as const;

/** The mcp namespace's procedures, with the resource registry in ctx. */
const mcpProcedure = publicProcedure.use(mcpServices);

export const mcpRouter = router({
  greeting: mcpProcedure
    .meta({
      keyAccess: 'any',
      description: 'Greet someone in English, Spanish, French or German',
      mcp: { annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .input(z.lazy(() => z.object({ name: z.string().min(1).max(200), language: z.enum(['en', 'es', 'fr', 'de']).default('en') })))
    .query(({ input }) => ({ greeting: `${GREETINGS[input.language]}, ${input.name}!`, language: input.language })),

  ping: mcpProcedure
    .meta({
      keyAccess: 'any',
      description: 'Liveness check: answers pong with the server time',
      mcp: { annotations: { readOnlyHint: true, idempotentHint: true } },
    })
    .query(() => ({ pong: true, timestamp: new Date().toISOString() })),

  echo: mcpProcedure
    .meta({ keyAccess: 'any', description: 'Echo a message back', mcp: { annotations: { readOnlyHint: true, idempotentHint: true } } })
    .input(z.lazy(() => z.object({ message: z.string().max(100_000) })))
    .query(({ input }) => ({ message: input.message })),

  currentSystemTime: mcpProcedure
    .meta({ keyAccess: 'any', description: 'Current server time', mcp: { annotations: { readOnlyHint: true } } })
    .input(z.lazy(() => z.object({ format: z.enum(['iso', 'timestamp', 'locale']).default('iso') }).default({ format: 'iso' })))
    .query(({ input }) => {
      const now = new Date();
      const time =
        input.format === 'timestamp'
          ? now.getTime()
          : input.format === 'locale'
            ? now.toLocaleString('en-US', { timeZoneName: 'short' })
            : now.toISOString();
      return { time, format: input.format };
    }),

  getResources: mcpProcedure
    .meta({ keyAccess: 'any', description: 'List registered resources, optionally filtered', mcp: { annotations: { readOnlyHint: true } } })
    .input(z.lazy(() => z.object({ category: z.string().max(200).optional(), search: z.string().max(200).optional() }).default({})))
    .query(({ ctx, input }) => {
      // Only what the caller may read (an API key's rules), as MCP resources/list shows it.
      const readable = resourceReader(ctx.resourceAccess.router, ctx.identity);
      const resources = ctx.resources
        .list(input)
        .filter(readable)
        .map((r) => r.uri);
      return { resources, total: resources.length };
    }),

  readResource: mcpProcedure
    .meta({ keyAccess: 'any', description: 'Read a registered resource by URI', mcp: { annotations: { readOnlyHint: true } } })
    .input(z.lazy(() => z.object({ uri: z.string().min(1).max(2048) })))
    .query(async ({ ctx, input }) => {
      const r = await readResourceAs(ctx.resourceAccess, ctx, input.uri, ctx.req.signal);
      return { content: r.content, mimeType: r.mimeType, uri: r.uri };
    }),

  apiDocumentationPrompt,
  codeReviewPrompt,
  explainConceptPrompt,
  incidentResponsePrompt,
});
