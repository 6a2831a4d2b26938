import os from 'node:os';
import { z } from 'zod';
import { redactConfig } from '../../config/redact.js';
import { router } from '../../trpc/init.js';
import { adminProcedure } from '../../trpc/procedures.js';
import { checkHealth } from '../../runtime/checkHealth.js';

/**
 * Diagnostics. Everything here reveals server internals, so every procedure needs an
 * administrator identity on every entry point (authType 'none' never makes anyone an admin).
 */
export const adminRouter = router({
  status: adminProcedure
    .meta({ description: 'Server status: uptime, memory, platform' })
    .input(z.object({ detailed: z.boolean().default(false) }).default({ detailed: false }))
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

  healthCheck: adminProcedure
    .meta({ description: 'Health checks on all services' })
    .query(({ ctx }) => checkHealth(ctx.runtime)),

  getConfig: adminProcedure
    .meta({ description: 'Current configuration, secrets redacted' })
    .input(z.object({ section: z.enum(['all', 'server', 'auth', 'ai', 'billing']).default('all') }).default({ section: 'all' }))
    .query(({ ctx, input }) => {
      const c = redactConfig(ctx.runtime.config);
      const sections = {
        server: { port: c.port, host: c.host, trustProxy: c.trustProxy, cors: c.cors, protocols: c.protocols, transports: c.transports, limits: c.limits, storage: c.storage, monitoring: c.monitoring, serverWorkspaces: c.serverWorkspaces, customRouters: Object.keys(c.customRouters) },
        auth: { mcp: c.mcp, oauth: c.oauth, jwt: c.jwt, admin: c.admin },
        ai: { ai: c.ai, serverProviders: c.serverProviders },
        billing: { billing: c.billing },
      };
      return input.section === 'all' ? sections : { [input.section]: sections[input.section] };
    }),

  statistics: adminProcedure
    .meta({ description: 'Request counts, errors and latency percentiles since start' })
    .input(z.object({ days: z.number().int().min(1).max(365).default(7) }).default({ days: 7 }))
    .query(({ ctx, input }) => ({ days: input.days, ...ctx.runtime.stats.snapshot() })),

  clearCache: adminProcedure
    .meta({ description: 'Clear in-memory caches and counters' })
    .input(z.object({ target: z.enum(['all', 'memory', 'tokens', 'usage']).default('all') }).default({ target: 'all' }))
    .mutation(({ ctx, input }) => {
      const cleared: string[] = [];
      if (input.target === 'all' || input.target === 'memory' || input.target === 'usage') {
        ctx.runtime.stats.reset();
        cleared.push('statistics');
      }
      return { success: true, target: input.target, cleared };
    }),

  getUserInfo: adminProcedure
    .meta({ description: 'What the server knows about a user (admin only)' })
    .input(z.object({ userId: z.string().min(1).max(320), includePermissions: z.boolean().default(true), includeUsage: z.boolean().default(false) }))
    .query(async ({ ctx, input }) => {
      const admins = ctx.runtime.config.admin.users;
      const isAdmin = admins.includes(input.userId);
      const [balances, byokProviders] = input.includeUsage
        ? await Promise.all([ctx.runtime.billing.balances(input.userId), ctx.runtime.vault.providers(input.userId)])
        : [undefined, undefined];
      return {
        userId: input.userId,
        isAdmin,
        ...(input.includePermissions ? { permissions: isAdmin ? ['admin', 'user'] : ['user'] } : {}),
        // Key status only: which providers have a stored key, never the keys.
        ...(input.includeUsage ? { usage: { balances, byokProviders } } : {}),
      };
    }),
});
