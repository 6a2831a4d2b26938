import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';
import { PARSE_ONCE } from '../parseOnce.js';

/** One server workspace; built on first use (z.lazy): a config without workspaces never builds it. */
export const WorkspaceConfigSchema = z.lazy(() =>
  z.strictObject({
    path: z.string().min(1),
    name: z.string().optional(),
    description: z.string().optional(),
    readOnly: z.boolean().default(false),
    allowedPaths: z.array(z.string()).optional(),
    blockedPaths: z.array(z.string()).optional(),
    maxFileSize: z.number().int().min(0).optional(),
    allowedExtensions: z.array(z.string().regex(/^\./, 'extensions are written with a leading dot')).optional(),
    blockedExtensions: z.array(z.string().regex(/^\./, 'extensions are written with a leading dot')).optional(),
    followSymlinks: z.boolean().default(false),
    enableWatching: z.boolean().default(false),
  }),
);
export type WorkspaceConfig = z.infer<typeof WorkspaceConfigSchema>;
export type WorkspaceConfigInput = z.input<typeof WorkspaceConfigSchema>;

const RESERVED = new Set(['enabled', 'additionalWorkspaces']);

/**
 * `serverWorkspaces`: `enabled`, `additionalWorkspaces` (id → config), and, as in the spec's
 * examples, ids placed directly under `serverWorkspaces`. Both forms are merged into
 * `workspaces`; the same id in both places is a config error.
 */
export const ServerWorkspacesSchema = lazySection('serverWorkspaces', () =>
  z
    .looseObject({
      enabled: z.boolean().default(true),
      additionalWorkspaces: z.record(z.string(), WorkspaceConfigSchema).default({}),
    })
    .transform((value, ctx) => {
      const workspaces: Record<string, WorkspaceConfig> = { ...value.additionalWorkspaces };
      for (const [id, raw] of Object.entries(value)) {
        if (RESERVED.has(id)) continue;
        const parsed = WorkspaceConfigSchema.safeParse(raw, PARSE_ONCE);
        if (!parsed.success) {
          for (const issue of parsed.error.issues) {
            ctx.issues.push({ ...issue, path: [id, ...issue.path], input: raw } as never);
          }
          continue;
        }
        if (workspaces[id]) {
          ctx.issues.push({ code: 'custom', path: [id], input: raw, message: `workspace id "${id}" is defined twice` });
          continue;
        }
        workspaces[id] = parsed.data;
      }
      return { enabled: value.enabled, workspaces };
    }),
);
