import os from 'node:os';
import { z } from '../../lib/zod.js';
import { redactConfig } from '../../config/redact.js';
import { router } from '../../pipeline/init.js';
import { adminProcedure } from '../../pipeline/procedures.js';
import { CLEAR_CACHES } from '../../runtime/createSignals.js';
import { checkHealth } from '../../runtime/checkHealth.js';
import { CoreError } from '../../kernel/CoreError.js';
import { adminServices } from './adminServices.js';
import { consoleProcedures } from './consoleProcedures.js';
import { governanceProcedures } from './governanceProcedures.js';

/** Every admin.* procedure: an administrator, with the admin services in ctx. */
const adminNamespace = adminProcedure.use(adminServices);

/**
 * Diagnostics. Everything here reveals server internals, so every procedure needs an
 * administrator identity on every entry point (authType 'none' never makes anyone an admin).
 */
export const adminRouter = router({
  status: adminNamespace
    .meta({ description: 'Server status: uptime, memory, platform' })
    .input(z.lazy(() => z.object({ detailed: z.boolean().default(false) }).default({ detailed: false })))
    .query(({ input }) => {
      const mem = process.memoryUsage();
      const total = os.totalmem();
      const status = {
        status: 'running',
        uptime: process.uptime(),
        memory: { used: mem.rss, total, percentage: Number(((mem.rss / total) * 100).toFixed(2)) },
        timestamp: new Date().toISOString(),
      };
      if (!input.detailed) return status;
      return {
        ...status,
        system: { platform: process.platform, arch: process.arch, nodeVersion: process.version },
        heap: { used: mem.heapUsed, total: mem.heapTotal },
        loadAverage: os.loadavg(),
      };
    }),

  healthCheck: adminNamespace.meta({ description: 'Health checks on all services' }).query(({ ctx }) => checkHealth(ctx)),

  getConfig: adminNamespace
    .meta({ description: 'Current configuration, secrets redacted' })
    .input(
      z.lazy(() => z.object({ section: z.enum(['all', 'server', 'auth', 'ai', 'billing']).default('all') }).default({ section: 'all' })),
    )
    .query(({ ctx, input }) => {
      const c = redactConfig(ctx.config);
      const sections = {
        server: {
          port: c.port,
          host: c.host,
          trustProxy: c.trustProxy,
          cors: c.cors,
          protocols: c.protocols,
          transports: c.transports,
          limits: c.limits,
          storage: c.storage,
          monitoring: c.monitoring,
          serverWorkspaces: c.serverWorkspaces,
          customRouters: Object.keys(c.customRouters),
        },
        auth: { mcp: c.mcp, oauth: c.oauth, jwt: c.jwt, admin: c.admin },
        ai: { ai: c.ai, serverProviders: c.serverProviders },
        billing: { billing: c.billing },
      };
      return input.section === 'all' ? sections : { [input.section]: sections[input.section] };
    }),

  statistics: adminNamespace
    .meta({
      description:
        'Request counts, errors and latency per procedure over the last `days` UTC days, from the store (the same on every instance)',
    })
    .input(z.lazy(() => z.object({ days: z.number().int().min(1).max(365).default(7) }).default({ days: 7 })))
    .query(({ ctx, input }) => ctx.stats.snapshot(input.days)),

  clearCache: adminNamespace
    .meta({
      description:
        "Clear caches: 'tokens' (verified-token cache), 'usage' (stored statistics, cluster-wide), 'responses' (the response cache, ai.cache, cluster-wide), 'memory' (every in-process cache), 'all'",
    })
    .input(
      z.lazy(() =>
        z.object({ target: z.enum(['all', 'memory', 'tokens', 'usage', 'responses']).default('all') }).default({ target: 'all' }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const cleared: string[] = [];
      const { target } = input;
      // In-process caches registered by their owners (the token verifier registers 'tokens').
      for (const [name, clear] of ctx.caches) {
        if (target === 'all' || target === 'memory' || target === name) {
          await clear();
          cleared.push(name);
        }
      }
      // Every other instance empties the same in-process caches (Redis pub/sub; see docs/storage.md),
      // and for 'usage' / 'all' drops the counts it has not written yet, which predate the clear.
      await ctx.signals.publish(CLEAR_CACHES, target);
      if (target === 'all' || target === 'responses') {
        await ctx.ai.clearResponses();
        cleared.push('responses');
      }
      if (target === 'all' || target === 'usage') {
        await ctx.stats.reset();
        cleared.push('statistics');
      }
      return { success: true, target, cleared, instances: ctx.signals.kind === 'redis' ? 'all' : 'this' };
    }),

  runRetention: adminNamespace
    .meta({
      description:
        'Archive now what storage.retention says is old: ledger, usage and credit records past their age are exported to a file, then deleted (balances never change)',
    })
    .mutation(async ({ ctx }) => {
      if (!ctx.retention.enabled)
        throw new CoreError('INVALID_PARAMS', 'retention is off: set storage.retention.ledgerDays, usageDays or purchasesDays');
      return ctx.retention.run();
    }),

  getUserInfo: adminNamespace
    .meta({ description: 'What the server knows about a user, by id (sub) or e-mail (admin only)' })
    .input(
      z.lazy(() =>
        z.object({
          userId: z.string().min(1).max(320),
          includePermissions: z.boolean().default(true),
          includeUsage: z.boolean().default(false),
        }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const { sub, profile } = await ctx.users.find(input.userId);
      const email = profile?.email ?? (input.userId.includes('@') ? input.userId : undefined);
      const listed = ctx.users.listedAdmin(sub, email);
      const [balances, byokProviders] = await Promise.all([ctx.billing.balances(sub), ctx.vault.providers(sub)]);
      // Known: has called, is listed, or was given tokens or stored a key (an admin may credit first).
      const hasAccount = balances.subscription + balances.one_time > 0 || byokProviders.length > 0;
      if (!profile && !listed && !hasAccount)
        throw new CoreError('NOT_FOUND', `no user "${input.userId.slice(0, 320)}" is known to this server`);
      // The same rule the access policy applies: listed in admin.users, or the administrator flag
      // the auth layer computed from the user's token (admin.scope) when it last called.
      const isAdmin = listed || profile?.isAdmin === true;
      return {
        userId: sub,
        ...(email ? { email } : {}),
        known: profile !== undefined,
        lastSeenAt: profile?.lastSeenAt ?? null,
        isAdmin,
        ...(input.includePermissions
          ? {
              permissions: isAdmin ? ['admin', 'user'] : ['user'],
              scopes: profile?.scopes ?? [],
              adminVia: listed ? 'admin.users' : profile?.isAdmin ? 'token' : null,
            }
          : {}),
        // Key status only: which providers have a stored key, never the keys.
        ...(input.includeUsage ? { usage: { balances, byokProviders, budget: (await ctx.billing.budgets.view(sub)).periods } } : {}),
      };
    }),

  ...governanceProcedures,
  ...consoleProcedures,
});
