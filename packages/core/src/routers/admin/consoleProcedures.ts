import { z } from '../../lib/zod.js';
import { CoreError } from '../../kernel/CoreError.js';
import { adminUsageAnalytics, daysBetween } from '../../services/billing/adminUsageAnalytics.js';
import { adminProcedure } from '../../pipeline/procedures.js';
import type { UserDirectory } from '../../services/directory/UserDirectory.js';
import { adminServices } from './adminServices.js';
import { cursorInput, limitInput } from '../billing/bounds.js';
import { overviewSeries } from './overviewSeries.js';

const UserRef = z.string().min(1).max(320).describe('user id (sub) or e-mail');
/** Most users a search page answers. */
const MAX_FOUND = 20;
/**
 * Most user index entries one search examines (one per user and e-mail change): the bound on
 * its cost. Past it the answer carries a cursor to search on; the ledger never enters into it.
 */
const MAX_SCANNED = 5000;

/** The stored id of a user named by id or e-mail; NOT_FOUND for an e-mail the server never saw. */
async function userId(ctx: { users: Pick<UserDirectory, 'find'> }, ref: string): Promise<string> {
  const { sub } = await ctx.users.find(ref);
  if (sub === ref && ref.includes('@'))
    throw new CoreError('NOT_FOUND', `no user with e-mail "${ref.slice(0, 320)}" is known to this server; name them by id`);
  return sub;
}

const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * What the web console reads beyond the procedures every client has: one overview call, user
 * search, a user's ledger pages and usage per day, alert deliveries (with a retry) and the most
 * recent calls. Administrators only, like the rest of `admin`. Each reads maintained rows, the
 * statistics, this instance's metrics or a bounded page of a log: nothing here scans a ledger.
 */
/** An administrator, with the admin services in ctx. */
const adminNamespace = adminProcedure.use(adminServices);

export const consoleProcedures = {
  overview: adminNamespace
    .meta({
      description:
        'The console overview in one call: requests and errors per day and entry point; calls, failures, upstream latency p50/p99, tokens and money per day by provider and by model (cluster-wide); MCP sessions and streams, alert backlog',
    })
    .input(z.lazy(() => z.strictObject({ days: z.number().int().min(1).max(90).default(14) }).default({ days: 14 })))
    .query(async ({ ctx, input }) => {
      const to = dayString(Date.now());
      const from = dayString(Date.now() - (input.days - 1) * 86_400_000);
      const days = daysBetween(from, to);
      const [statistics, usage, figures, alerts] = await Promise.all([
        ctx.stats.snapshot(input.days),
        adminUsageAnalytics(ctx.storage, { from, to, sortBy: 'cost', limit: 10, series: true }),
        ctx.metrics?.consoleFigures(),
        ctx.alerts.pending(),
      ]);
      // After the snapshot: it had every instance write its pending counts, upstream ones included.
      const upstreamDays = await ctx.stats.upstreamDays(days);
      const { seriesByProvider, seriesByModel, ...usageTotals } = usage;
      return {
        period: { from, to, days: input.days },
        requests: {
          total: statistics.total,
          errors: statistics.errors,
          byDay: statistics.byDay,
          byDayEntry: statistics.byDayEntry,
          procedures: statistics.procedures.slice(0, 15),
        },
        usage: usageTotals,
        // Cluster-wide, from the statistics and the usage day rows (null with statistics.enabled false).
        series: ctx.config.statistics.enabled ? overviewSeries(days, statistics, { seriesByProvider, seriesByModel }, upstreamDays) : null,
        // This instance's upstream figures since it started (Prometheus counters), null with metrics off.
        upstream: figures?.providers ?? null,
        mcp: figures?.mcp ?? null,
        alerts,
      };
    }),

  routes: adminNamespace
    .meta({
      description:
        "Routes (ai.routes) with each target's share of calls, latency, errors, in-flight calls (this instance), cooldown state and rpm/tpm headroom this minute (shared); the response cache's hit rate and tokens and USD saved (this instance)",
    })
    .query(async ({ ctx }) => ({ routes: await ctx.ai.routes(), cache: ctx.ai.cacheFigures() })),

  findUsers: adminNamespace
    .meta({
      description:
        'Users whose id or e-mail contains the query, ignoring case: an exact id or e-mail first, then at most `limit` matches per page, most recently indexed first; an empty query lists every user, most recent first; pass nextCursor for more',
    })
    .input(
      z.lazy(() =>
        z.strictObject({
          // Empty: every user matches (the console's first page, before any search).
          query: z.string().trim().max(320).default(''),
          limit: z.number().int().min(1).max(MAX_FOUND).default(MAX_FOUND),
          cursor: z.number().int().min(1).optional().describe('nextCursor of the previous page'),
        }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const first = input.cursor === undefined;
      const [exact, page] = await Promise.all([
        first && input.query ? ctx.users.find(input.query) : undefined,
        ctx.users.search(input.query, { limit: input.limit, cursor: input.cursor, maxScanned: MAX_SCANNED }),
      ]);
      const subs: string[] = [];
      // An exact id or e-mail leads the first page (also a user credited but never seen, who has no profile).
      if (exact && (exact.profile || !input.query.includes('@'))) subs.push(exact.sub);
      for (const sub of page.subs) if (!subs.includes(sub)) subs.push(sub);
      const profiles = new Map(page.profiles.map((p) => [p.sub, p]));
      if (exact?.profile) profiles.set(exact.sub, exact.profile);
      const found = await Promise.all(
        subs.slice(0, input.limit + 1).map(async (sub) => {
          const profile = profiles.get(sub);
          const balances = await ctx.billing.balances(sub);
          const known = profile !== undefined || balances.subscription + balances.one_time > 0;
          return known
            ? {
                userId: sub,
                email: profile?.email ?? null,
                lastSeenAt: profile?.lastSeenAt ?? null,
                isAdmin: ctx.users.listedAdmin(sub, profile?.email) || profile?.isAdmin === true,
                balances,
              }
            : undefined;
        }),
      );
      return {
        users: found.filter((u) => u !== undefined),
        scanned: page.scanned,
        ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
      };
    }),

  userActivity: adminNamespace
    .meta({
      description:
        "One page of a user's ledger: AI calls (usage), credits and purchases, or which balance paid each call (consumption), newest first",
    })
    .input(
      z.lazy(() =>
        z.strictObject({ userId: UserRef, kind: z.enum(['usage', 'purchases', 'consumption']), limit: limitInput, cursor: cursorInput }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const sub = await userId(ctx, input.userId);
      const page = { limit: input.limit, ...(input.cursor !== undefined ? { cursor: input.cursor } : {}) };
      const billing = ctx.billing;
      const { items, nextCursor } =
        input.kind === 'usage'
          ? await billing.usageHistory(sub, page)
          : input.kind === 'purchases'
            ? await billing.purchaseHistory(sub, { ...page, type: 'all' })
            : await billing.consumptionHistory(sub, page);
      return { userId: sub, kind: input.kind, items: items as unknown[], ...(nextCursor !== undefined ? { nextCursor } : {}) };
    }),

  userUsage: adminNamespace
    .meta({ description: "A user's usage per day, provider and model over the last days (from the maintained day rows)" })
    .input(z.lazy(() => z.strictObject({ userId: UserRef, days: z.number().int().min(1).max(365).default(30) })))
    .query(async ({ ctx, input }) => {
      const sub = await userId(ctx, input.userId);
      const [analytics, byApiKey] = await Promise.all([
        ctx.billing.usageAnalytics(sub, { days: input.days, includeHistory: false, historyLimit: 1 }),
        ctx.keys.spendByKey(sub),
      ]);
      return { userId: sub, ...analytics, byApiKey };
    }),

  alertDeliveries: adminNamespace
    .meta({
      description:
        'Alert webhook deliveries waiting (attempts, next attempt, last error) and dead letters, newest first; receivers by origin only',
    })
    .input(z.lazy(() => z.strictObject({ limit: z.number().int().min(1).max(200).default(50) }).default({ limit: 50 })))
    .query(async ({ ctx, input }) => ({ enabled: ctx.alerts.enabled, ...(await ctx.alerts.deliveries(input.limit)) })),

  retryAlert: adminNamespace
    .meta({ description: 'Send a dead-lettered alert delivery again (attempts reset), or make a waiting one due now' })
    .input(z.lazy(() => z.strictObject({ deliveryId: z.string().min(3).max(200).describe('deliveryId from admin.alertDeliveries') })))
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.alerts.retry(input.deliveryId);
      if (!result.retried)
        throw new CoreError('NOT_FOUND', 'no dead or waiting delivery with this id (it may have been retried or delivered already)');
      ctx.logger.info('alerts: delivery retried by an administrator', {
        by: ctx.identity.sub,
        deliveryId: input.deliveryId,
        state: result.state,
      });
      return { deliveryId: input.deliveryId, state: result.state };
    }),

  recentCalls: adminNamespace
    .meta({
      description:
        'The most recent procedure calls on this instance (entry point, procedure, caller id, status, latency, tokens; a streamed call shows its tokens once its stream ended); never input, prompt or answer text',
    })
    .input(
      z.lazy(() =>
        z
          .strictObject({
            limit: z.number().int().min(1).max(500).default(100),
            after: z
              .number()
              .int()
              .min(0)
              .optional()
              .describe('only calls recorded or updated after this lastSeq of a previous answer (polling); merge them by seq'),
          })
          .default({ limit: 100 }),
      ),
    )
    .query(({ ctx, input }) => ({
      calls: ctx.recentCalls.list(input.limit, input.after),
      lastSeq: ctx.recentCalls.lastSeq,
    })),
};
