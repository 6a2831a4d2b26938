import { z } from '../../lib/zod.js';
import { lazySection } from '../lazySection.js';
import { once } from '../../lib/once.js';
import { compileUriTemplate } from '../../lib/uriTemplate.js';

/** Schemes a configured resource may use: files of a server workspace, or a web address. */
export const CONFIG_RESOURCE_SCHEMES = ['workspace', 'https', 'http'] as const;

const mime = () => z.string().regex(/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i, 'a MIME type such as text/markdown');
const text = (max: number) => z.string().min(1).max(max);

function schemeProblem(value: string): string | null {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (!scheme) return 'must start with a scheme: workspace://, https:// or http://';
  if (!(CONFIG_RESOURCE_SCHEMES as readonly string[]).includes(scheme))
    return `scheme "${scheme}" has no handler here (use workspace://, https:// or http://)`;
  if (scheme === 'workspace' && !/^workspace:\/\/[^/?#]+\/[^?#]+$/i.test(value))
    return 'a workspace resource is workspace://<workspace id>/<path>';
  // Credentials would be printed with the config and sent to whoever answers; they are refused.
  if (/^[a-z]+:\/\/[^/?#]*@/i.test(value)) return 'URIs must not contain credentials (user:password@)';
  return null;
}

/** One resource: its URI is read by the handler of its scheme whenever a client reads it. */
export const configResourceSchema = once(() =>
  z.strictObject({
    uri: z
      .string()
      .max(2048)
      .superRefine((v, ctx) => {
        const p = schemeProblem(v);
        if (p) return void ctx.addIssue({ code: 'custom', message: p });
        try {
          new URL(v);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'not a valid URI' });
        }
      }),
    name: text(200),
    title: text(200).optional(),
    description: text(2000).optional(),
    mimeType: mime().optional(),
    /** For mcp.getResources({ category }). */
    category: text(100).optional(),
  }),
);

/** A family of resources (RFC 6570 `{var}` one segment, `{+var}` several), e.g. `workspace://docs/guides/{+path}`. */
export const configResourceTemplateSchema = once(() =>
  z.strictObject({
    uriTemplate: z
      .string()
      .max(2048)
      .superRefine((v, ctx) => {
        const p = schemeProblem(v.replace(/\{\+?[A-Za-z0-9_]+\}/g, 'x'));
        if (p) return void ctx.addIssue({ code: 'custom', message: p });
        if (compileUriTemplate(v).variables.length === 0)
          ctx.addIssue({ code: 'custom', message: 'a template needs at least one {variable}; use resources.list for a single URI' });
        // The host (or workspace id) must be literal: a template never lets a client pick where we connect.
        if (/^[a-z]+:\/\/[^/]*\{/i.test(v))
          ctx.addIssue({ code: 'custom', message: 'the host / workspace id of a template must be literal' });
      }),
    name: text(200),
    title: text(200).optional(),
    description: text(2000).optional(),
    mimeType: mime().optional(),
  }),
);

/**
 * `resources`: MCP resources and resource templates without code. Published on resources/list,
 * resources/templates/list, mcp.getResources and mcp.readResource (every entry point sees the
 * same registry). `workspace://` reads go through the workspace guard and the access rules of
 * system.readFile; `https://` reads through the SSRF-guarded fetch, bounded by `fetch`.
 */
export const ResourcesSchema = lazySection('resources', () =>
  z.strictObject({
    list: z.array(configResourceSchema()).max(1000).default([]),
    templates: z.array(configResourceTemplateSchema()).max(200).default([]),
    /** Offer each configured server workspace's files as a template `workspace://<id>/{+path}`. Default true. */
    workspaceFiles: z.boolean().default(true),
    fetch: z
      .strictObject({
        /** Give up after this many ms. Default 10000. */
        timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
        /** Largest body read, in bytes. Default 5 MiB. */
        maxBytes: z
          .number()
          .int()
          .min(1024)
          .max(100 * 1024 * 1024)
          .default(5 * 1024 * 1024),
        /** Fetch loopback, private and link-local addresses. Development and tests only (SSRF). Default false. */
        allowPrivateNetwork: z.boolean().default(false),
      })
      .prefault({}),
  }),
);
