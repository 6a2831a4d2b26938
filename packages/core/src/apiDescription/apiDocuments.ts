import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../config/schema.js';

type Json = Record<string, unknown>;
export type ApiDocumentKind = 'openrpc' | 'openapi';

/** Schemas are converted once per router; only `servers` depends on the request. */
const cache = new WeakMap<AnyRouter, Partial<Record<ApiDocumentKind, Json>>>();

/**
 * The OpenRPC or OpenAPI document of a server's router, with `servers` pointing at `baseUrl`
 * (the address the caller used, see publicBaseUrl). The builders and the schema conversion they
 * run load on the first request for a document: a server nobody asks for one never loads them.
 */
export async function apiDocument(kind: ApiDocumentKind, router: AnyRouter, config: ResolvedConfig, baseUrl: string): Promise<Json> {
  let docs = cache.get(router);
  if (!docs) cache.set(router, (docs = {}));
  const opts = { baseUrl: '', title: config.apiDescription.title, version: config.apiDescription.version };
  const doc = (docs[kind] ??=
    kind === 'openrpc'
      ? (await import('./openRpcDocument.js')).openRpcDocument(router, opts)
      : (await import('./openApiDocument.js')).openApiDocument(router, opts));
  const servers = kind === 'openrpc' ? [{ name: 'json-rpc', url: `${baseUrl}/rpc` }] : [{ url: baseUrl }];
  return { ...doc, servers };
}
