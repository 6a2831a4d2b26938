import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../config/schema.js';
import { openApiDocument } from './openApiDocument.js';
import { openRpcDocument } from './openRpcDocument.js';

type Json = Record<string, unknown>;
export type ApiDocumentKind = 'openrpc' | 'openapi';

/** Schemas are converted once per router; only `servers` depends on the request. */
const cache = new WeakMap<AnyRouter, Partial<Record<ApiDocumentKind, Json>>>();

/**
 * The OpenRPC or OpenAPI document of a server's router, with `servers` pointing at `baseUrl`
 * (the address the caller used, see publicBaseUrl).
 */
export function apiDocument(kind: ApiDocumentKind, router: AnyRouter, config: ResolvedConfig, baseUrl: string): Json {
  let docs = cache.get(router);
  if (!docs) cache.set(router, (docs = {}));
  const opts = { baseUrl: '', title: config.apiDescription.title, version: config.apiDescription.version };
  const doc = (docs[kind] ??= kind === 'openrpc' ? openRpcDocument(router, opts) : openApiDocument(router, opts));
  const servers = kind === 'openrpc' ? [{ name: 'json-rpc', url: `${baseUrl}/rpc` }] : [{ url: baseUrl }];
  return { ...doc, servers };
}
