/**
 * What the procedures answer, as the server's own types say (inferred from core's router), so
 * the console's view of an answer cannot drift from what the server sends (api.ts `call` checks
 * the procedure's name and types its answer). Types only: nothing
 * of core or tRPC is bundled. They are read from core's built declarations (`dist/index.d.ts`),
 * so build core before type-checking the console (`pnpm build` does).
 */
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@ai-backend/core';

export type Outputs = inferRouterOutputs<AppRouter>;
export type Overview = Outputs['admin']['overview'];
export type { AlertDelivery, KeySeries, RecentCall } from '@ai-backend/core/internal';

/** Every procedure as `namespace.procedure` with its answer: `[name, output]` pairs. */
type Pairs = {
  [N in keyof Outputs & string]: { [P in keyof Outputs[N] & string]: [`${N}.${P}`, Outputs[N][P]] }[keyof Outputs[N] & string];
}[keyof Outputs & string];
/** A procedure name the server's router has. */
export type Method = Pairs[0];
/** The answer of procedure `M`. */
export type Output<M extends Method> = Extract<Pairs, [M, unknown]>[1];
