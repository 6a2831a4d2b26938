import { z } from 'zod';
import { CoreError, mergeRouters, middleware, protectedProcedure, publicProcedure, router, withServices } from 'ai-backend';

/**
 * A middleware of our own, built with `middleware` from ai-backend: it runs after the built-in
 * one (credential check, access policy, rate limits), on every entry point, and adds what the
 * procedures below need to the context.
 */
const withStation = middleware(({ next }) => next({ ctx: { station: 'example-weather-station' } }));

/** Reading the weather: public, and an MCP tool. */
const forecastRouter = router({
  forecast: publicProcedure
    .use(withStation)
    .meta({ description: 'Three-day forecast for a city', mcp: { name: 'forecast', public: true, annotations: { readOnlyHint: true } } })
    .input(z.object({ city: z.string().min(1).max(100), days: z.number().int().min(1).max(3).default(3) }))
    .query(({ ctx, input }) => ({
      city: input.city,
      station: ctx.station,
      days: Array.from({ length: input.days }, (_, i) => ({ day: i + 1, sky: (input.city.length + i) % 2 ? 'sunny' : 'cloudy' })),
    })),
});

/** What a signed-in user keeps, in the server's storage (`withServices` adds ctx.storage, ctx.prompts, ctx.resources). */
const favouritesRouter = router({
  saveFavourite: protectedProcedure
    .use(withServices)
    .meta({ description: 'Remember a favourite city for the signed-in user', mcp: { annotations: { idempotentHint: true } } })
    .input(z.object({ city: z.string().min(1).max(100) }))
    .mutation(async ({ ctx, input }) => {
      if (input.city.toLowerCase() === 'atlantis') throw new CoreError('NOT_FOUND', 'no such city');
      await ctx.storage.set(`weather:fav:${ctx.identity.sub}`, input.city);
      return { saved: input.city };
    }),
});

/**
 * An operator's own namespace, merged from two routers with `mergeRouters`. Every procedure
 * appears on /trpc and /rpc as `weather.<name>`; those with `meta.mcp` are MCP tools too. Use the
 * exported procedure builders so the same auth, rate limits and validation apply on all three
 * entry points.
 */
export const weatherRouter = mergeRouters(forecastRouter, favouritesRouter);
