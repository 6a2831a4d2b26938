import type { AnyRouter } from '@trpc/server';
import { CoreError } from '../kernel/CoreError.js';
import type { Identity } from '../kernel/identity.js';
import type { Runtime } from '../runtime/Runtime.js';
import { keyAllowsResource, keyResourceRefusal } from '../services/apiKeys/keyRules.js';
import type { ResourceContent } from '../services/resources/ResourceRegistry.js';
import { recordKeyRefusal, type RefusalSite } from '../services/security/keyRefusalEvent.js';
import { keyMayCall } from './accessPolicy.js';
import type { Context } from './context.js';
import { loadedProcedureIndex } from './invoke.js';

/** A resource, a template, or a URI one of them serves, as the key check sees it. */
export interface ResourceTarget {
  uri?: string | undefined;
  uriTemplate?: string | undefined;
  /** The procedure that serves it, when one does. */
  procedure?: string | undefined;
}

/**
 * THE check of an API key's rules for resources, whatever serves them and wherever they are
 * asked for (MCP resources/list, templates/list, read, subscribe, subscriptions/listen,
 * completion/complete; mcp.getResources and mcp.readResource on every entry point):
 * - one a procedure serves (`meta.mcp.resource`, a `workspace://` resource through
 *   system.readFile) is readable when the key may call that procedure (its keyAccess, scopes
 *   and tools rule);
 * - one no procedure serves (an `https://`/`http://` entry of `resources`, one registered from
 *   code) is readable when the key's `tools` rule names its URI or URI template (globs:
 *   `https://docs.example.com/**`); a key without a tools rule reads it.
 * Not an API key: everything. The MCP gateway's upstream resources have their own rule (the
 * key's tools rule must admit the whole server: UpstreamContent).
 */
export function resourceReader(router: AnyRouter, identity: Identity | null | undefined): (target: ResourceTarget) => boolean {
  if (identity?.via !== 'apiKey') return () => true;
  const index = loadedProcedureIndex(router);
  return (t) =>
    t.procedure !== undefined
      ? keyMayCall(t.procedure, index.get(t.procedure)?.meta, identity)
      : keyAllowsResource(identity.apiKey, [t.uri, t.uriTemplate]);
}

/** The one answer for a URI no resource serves and for one the caller's key may not read. */
const unknownResource = () => new CoreError('NOT_FOUND', 'resource not found');

/**
 * Refuse `uri` unless it is a registered resource (or a template's) that `identity` may read
 * (resourceReader). A resource the key may not read gets the answer an unknown one gets, so a key
 * cannot tell it exists; the refusal is recorded in the security log (`key_refused`,
 * `key_resource_not_allowed`, the URI as its path).
 */
export function assertReadable(
  runtime: Pick<Runtime, 'resources' | 'router' | 'security'>,
  identity: Identity | null | undefined,
  uri: string,
  site: Omit<RefusalSite, 'path'>,
): void {
  const target = runtime.resources.targetOf(uri);
  if (!target) throw unknownResource();
  if (resourceReader(runtime.router, identity)({ uri, ...target })) return;
  recordKeyRefusal(runtime.security, identity, keyResourceRefusal(), { ...site, path: uri });
  throw unknownResource();
}

/** Read a resource as the caller of `ctx` (MCP resources/read, mcp.readResource): assertReadable, then the registry's read. */
export async function readResourceAs(
  runtime: Pick<Runtime, 'resources' | 'router' | 'security'>,
  ctx: Context,
  uri: string,
  signal?: AbortSignal,
): Promise<ResourceContent & { uri: string }> {
  assertReadable(runtime, ctx.identity, uri, { transport: ctx.req.transport, ip: ctx.req.ip });
  return runtime.resources.read(uri, signal, ctx);
}
