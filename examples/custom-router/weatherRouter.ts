import { z } from 'zod';
import { CoreError, protectedProcedure, publicProcedure, router } from 'ai-backend';

/**
 * An operator's own namespace. Every procedure appears on /trpc and /rpc as `weather.<name>`;
 * those with `meta.mcp` are MCP tools too. Use the exported procedure builders so the same
 * auth, rate limits and validation apply on all three entry points.
 */
export const weatherRouter = router({
  forecast: publicProcedure
    .meta({ description: 'Three-day forecast for a city', mcp: { name: 'forecast', public: true, annotations: { readOnlyHint: true } } })
    .input(z.object({ city: z.string().min(1).max(100), days: z.number().int().min(1).max(3).default(3) }))
    .query(({ input }) => ({
      city: input.city,
      days: Array.from({ length: input.days }, (_, i) => ({ day: i + 1, sky: (input.city.length + i) % 2 ? 'sunny' : 'cloudy' })),
    })),

  saveFavourite: protectedProcedure
    .meta({ description: 'Remember a favourite city for the signed-in user', mcp: { annotations: { idempotentHint: true } } })
    .input(z.object({ city: z.string().min(1).max(100) }))
    .mutation(async ({ ctx, input }) => {
      if (input.city.toLowerCase() === 'atlantis') throw new CoreError('NOT_FOUND', 'no such city');
      await ctx.runtime.storage.set(`weather:fav:${ctx.identity.sub}`, input.city);
      return { saved: input.city };
    }),
});
