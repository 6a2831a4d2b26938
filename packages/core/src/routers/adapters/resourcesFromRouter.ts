import type { AnyRouter } from '@trpc/server';
import { CoreError } from '../../kernel/CoreError.js';
import type { Context } from '../../pipeline/context.js';
import { runtimeOf } from '../../pipeline/callContext.js';
import { invoke, loadedProcedureIndex } from '../../pipeline/invoke.js';
import type { ResourceContent, ResourceRegistry } from '../../services/resources/ResourceRegistry.js';

/**
 * What a resource procedure returns, as resource content: a string is text (the meta's
 * mimeType, default text/plain); `{ text, mimeType? }` or `{ blob, mimeType? }` (base64) are
 * taken as they are; anything else is sent as JSON.
 */
export function toResourceContent(data: unknown, mimeType: string | undefined): ResourceContent {
  if (typeof data === 'string') return { content: data, mimeType: mimeType ?? 'text/plain' };
  if (data && typeof data === 'object') {
    const d = data as { text?: unknown; blob?: unknown; mimeType?: unknown };
    const mt = typeof d.mimeType === 'string' ? d.mimeType : mimeType;
    if (typeof d.blob === 'string') return { content: d.blob, blob: true, mimeType: mt ?? 'application/octet-stream' };
    if (typeof d.text === 'string') return { content: d.text, mimeType: mt ?? 'text/plain' };
  }
  return { content: JSON.stringify(data ?? null), mimeType: mimeType ?? 'application/json' };
}

async function run(path: string, input: unknown, mimeType: string | undefined, ctx: Context | undefined): Promise<ResourceContent> {
  // Procedures run with the caller's identity and limits, so a context is required.
  if (!ctx) throw new CoreError('BAD_REQUEST', 'this resource is served by a procedure and needs a caller context');
  const result = await invoke(runtimeOf(ctx).router, path, input, ctx);
  if (!result.ok) throw result.error;
  return toResourceContent(result.data, mimeType);
}

/**
 * Register every query procedure with `meta.mcp.resource`: `uri` makes a fixed resource (the
 * procedure takes no input), `uriTemplate` a template whose variables are the input fields.
 * Like promptsFromRouter, it reads the procedures built so far (the lazy built-in namespaces
 * carry no resources).
 */
export function registerRouterResources(router: AnyRouter, registry: ResourceRegistry): void {
  for (const info of loadedProcedureIndex(router).values()) {
    const r = info.meta?.mcp?.resource;
    if (!r || info.type !== 'query') continue;
    const name = r.name ?? info.path.split('.').pop()!;
    const description = r.description ?? info.meta?.description;
    const common = {
      name,
      ...(r.title ? { title: r.title } : {}),
      ...(description ? { description } : {}),
      ...(r.mimeType ? { mimeType: r.mimeType } : {}),
    };
    const path = info.path;
    if (r.uri !== undefined) {
      registry.register({
        uri: r.uri,
        ...common,
        procedure: path,
        read: (_signal, ctx) => run(path, undefined, r.mimeType, ctx as Context | undefined),
      });
    } else {
      registry.registerTemplate({
        uriTemplate: r.uriTemplate,
        ...common,
        procedure: path,
        read: (_uri, vars, _signal, ctx) => run(path, vars, r.mimeType, ctx as Context | undefined),
      });
    }
  }
}
