import { z } from 'zod';
import { CoreError } from '../../kernel/CoreError.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { adminUsageAnalytics } from '../../services/billing/adminUsageAnalytics.js';
import { adminProcedure } from '../../pipeline/procedures.js';
import { cursorInput, limitInput } from '../billing/bounds.js';

const UserRef = z.string().min(1).max(320).describe('user id (sub) or e-mail');
/** Most users a search answers (a prefix may match many). */
const MAX_FOUND = 20;

/** The stored id of a user named by id or e-mail; NOT_FOUND for an e-mail the server never saw. */
async function userId(runtime: Runtime, ref: string): Promise<string> {
  const { sub } = await runtime.users.find(ref);
  if (sub === ref && ref.includes('@')) throw new CoreError('NOT_FOUND', `no user with e-mail "${ref.slice(0, 320)}" is known to this server; name them by id`);
  return sub;
}

const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * What the web console reads beyond the procedures every client has: one overview call, user
 * search, a user's ledger pages and usage per day, alert deliveries (with a retry) and the most
 * recent calls. Administrators only, like the rest of `admin`. Each reads maintained rows, the
 * statistics, this instance's metrics or a bounded page of a log: nothing here scans a ledger.
 */
export const consoleProcedures = {
  overview: adminProcedure
    .meta({ description: 'The console overview in one call: requests and errors per day and entry point, tokens and money per day, provider and model, upstream latency per provider, MCP sessions and streams, alert backlog' })
    .input(z.strictObject({ days: z.number().int().min(1).max(90).default(14) }).default({ days: 14 }))
    .query(async ({ ctx, input }) => {
      const { runtime } = ctx;
      const to = dayString(Date.now());
      const from = dayString(Date.now() - (input.days - 1) * 86_400_000);
      const [statistics, usage, figures, alerts] = await Promise.all([
        runtime.stats.snapshot(input.days),
        adminUsageAnalytics(runtime.storage, { from, to, sortBy: 'cost', limit: 10 }),
        runtime.metrics?.consoleFigures(),
        runtime.alerts.pending(),
      ]);
      return {
        period: { from, to, days: input.days },
        requests: { total: statistics.total, errors: statistics.errors, byDay: statistics.byDay, byDayEntry: statistics.byDayEntry, procedures: statistics.procedures.slice(0, 15) },
        usage,
        // This instance's upstream figures since it started (Prometheus counters), null with metrics off.
        upstream: figures?.providers ?? null,
        mcp: figures?.mcp ?? null,
        alerts,
      };
    }),

  findUsers: adminProcedure
    .meta({ description: 'Users by exact id or e-mail, or by the beginning of their id (at most 20)' })
    .input(z.strictObject({ query: z.string().trim().min(1).max(320) }))
    .query(async ({ ctx, input }) => {
      const { runtime } = ctx;
      const exact = await runtime.users.find(input.query);
      const subs = new Set<string>();
      if (exact.profile || !input.query.includes('@')) subs.add(exact.sub);
      if (!input.query.includes('@')) for (const sub of await runtime.users.subsStartingWith(input.query, MAX_FOUND)) subs.add(sub);
      const found = await Promise.all(
        [...subs].slice(0, MAX_FOUND).map(async (sub) => {
          const [{ profile }, balances] = await Promise.all([runtime.users.find(sub), runtime.billing.balances(sub)]);
          const known = profile !== undefined || balances.subscription + balances.one_time > 0;
          return known ? { userId: sub, email: profile?.email ?? null, lastSeenAt: profile?.lastSeenAt ?? null, isAdmin: runtime.users.listedAdmin(sub, profile?.email) || profile?.isAdmin === true, balances } : undefined;
        }),
      );
      return { users: found.filter((u) => u !== undefined) };
    }),

  userActivity: adminProcedure
    .meta({ description: "One page of a user's ledger: AI calls (usage), credits and purchases, or which balance paid each call (consumption), newest first" })
    .input(z.strictObject({ userId: UserRef, kind: z.enum(['usage', 'purchases', 'consumption']), limit: limitInput, cursor: cursorInput }))
    .query(async ({ ctx, input }) => {
      const sub = await userId(ctx.runtime, input.userId);
      const page = { limit: input.limit, ...(input.cursor !== undefined ? { cursor: input.cursor } : {}) };
      const billing = ctx.runtime.billing;
      const { items, nextCursor } =
        input.kind === 'usage' ? await billing.usageHistory(sub, page) : input.kind === 'purchases' ? await billing.purchaseHistory(sub, { ...page, type: 'all' }) : await billing.consumptionHistory(sub, page);
      return { userId: sub, kind: input.kind, items: items as unknown[], ...(nextCursor !== undefined ? { nextCursor } : {}) };
    }),

  userUsage: adminProcedure
    .meta({ description: "A user's usage per day, provider and model over the last days (from the maintained day rows)" })
    .input(z.strictObject({ userId: UserRef, days: z.number().int().min(1).max(365).default(30) }))
    .query(async ({ ctx, input }) => {
      const sub = await userId(ctx.runtime, input.userId);
      const [analytics, byApiKey] = await Promise.all([ctx.runtime.billing.usageAnalytics(sub, { days: input.days, includeHistory: false, historyLimit: 1 }), ctx.runtime.keys.spendByKey(sub)]);
      return { userId: sub, ...analytics, byApiKey };
    }),

  alertDeliveries: adminProcedure
    .meta({ description: 'Alert webhook deliveries waiting (attempts, next attempt, last error) and dead letters, newest first; receivers by origin only' })
    .input(z.strictObject({ limit: z.number().int().min(1).max(200).default(50) }).default({ limit: 50 }))
    .query(async ({ ctx, input }) => ({ enabled: ctx.runtime.alerts.enabled, ...(await ctx.runtime.alerts.deliveries(input.limit)) })),

  retryAlert: adminProcedure
    .meta({ description: 'Send a dead-lettered alert delivery again (attempts reset), or make a waiting one due now' })
    .input(z.strictObject({ deliveryId: z.string().min(3).max(200).describe('deliveryId from admin.alertDeliveries') }))
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.runtime.alerts.retry(input.deliveryId);
      if (!result.retried) throw new CoreError('NOT_FOUND', 'no dead or waiting delivery with this id (it may have been retried or delivered already)');
      ctx.runtime.logger.info('alerts: delivery retried by an administrator', { by: ctx.identity.sub, deliveryId: input.deliveryId, state: result.state });
      return { deliveryId: input.deliveryId, state: result.state };
    }),

  recentCalls: adminProcedure
    .meta({ description: "The most recent procedure calls on this instance (entry point, procedure, caller id, status, latency, tokens); never input, prompt or answer text" })
    .input(z.strictObject({ limit: z.number().int().min(1).max(500).default(100), after: z.number().int().min(0).optional().describe('only calls after this seq (polling)') }).default({ limit: 100 }))
    .query(({ ctx, input }) => ({ calls: ctx.runtime.recentCalls.list(input.limit, input.after), lastSeq: ctx.runtime.recentCalls.lastSeq })),
};
