import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import superjson from 'superjson';
import { z } from 'zod';
import { createServer, publicProcedure, router, MemoryStorage, type AppRouterWith } from 'ai-backend';

/**
 * The README's "In your own app" example, typed end to end: createServer is generic over
 * customRouters, so a @trpc/client built from the server's router type sees `weather.forecast`
 * next to the built-in namespaces. `tsc -p tsconfig.json` checks this file: a missing namespace
 * is a compile error, not only a failed assertion.
 */
const weather = router({
  forecast: publicProcedure
    .meta({ description: 'Forecast for a city', mcp: { public: true } })
    .input(z.object({ city: z.string() }))
    .query(({ input }) => ({ city: input.city, sky: 'sunny' })),
});

const server = createServer(
  {
    port: 0,
    host: '127.0.0.1',
    customRouters: { weather },
    mcp: { auth: { authType: 'none' } },
    monitoring: { logging: { level: 'silent' } },
  },
  { storage: new MemoryStorage() },
);
type ServerRouter = typeof server.router;

let url: string;
beforeAll(async () => {
  url = (await server.start()).url;
});
afterAll(() => server.stop());

describe('a typed @trpc/client over a server with customRouters', () => {
  it('calls the custom namespace and a built-in one with full types', async () => {
    const client = createTRPCClient<ServerRouter>({ links: [httpBatchLink({ url: url + '/trpc', transformer: superjson })] });
    const [forecast, echo] = await Promise.all([client.weather.forecast.query({ city: 'Oslo' }), client.mcp.echo.query({ message: 'hi' })]);
    expectTypeOf(forecast).toEqualTypeOf<{ city: string; sky: string }>();
    expect(forecast).toEqual({ city: 'Oslo', sky: 'sunny' });
    expect(echo).toEqual({ message: 'hi' });
    // @ts-expect-error: the input is checked against the procedure's zod schema at compile time.
    await expect(client.weather.forecast.query({ town: 'Oslo' })).rejects.toThrow();
  });

  it('AppRouterWith names the same router type without a server value', () => {
    expectTypeOf<AppRouterWith<{ weather: typeof weather }>>().toEqualTypeOf<ServerRouter>();
    // @ts-expect-error: a namespace that does not exist is a compile error.
    expectTypeOf<ServerRouter['weather']['nope']>().toBeNever();
  });
});
