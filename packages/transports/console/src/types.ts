/**
 * What the procedures answer, as the server's own types say (inferred from core's router), so
 * the console's view of an answer cannot drift from what the server sends. Types only: nothing
 * of core or tRPC is bundled. They are read from core's built declarations (`dist/index.d.ts`),
 * so build core before type-checking the console (`pnpm build` does).
 */
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@ai-backend/core';

export type Outputs = inferRouterOutputs<AppRouter>;
export type Overview = Outputs['admin']['overview'];
export type FoundUsers = Outputs['admin']['findUsers'];
export type RecentCallsAnswer = Outputs['admin']['recentCalls'];
export type AlertDeliveriesAnswer = Outputs['admin']['alertDeliveries'];
export type { AlertDelivery, KeySeries, RecentCall } from '@ai-backend/core';
