import { isLegacyRequest } from '@modelcontextprotocol/server';

/** The `_meta` key whose presence makes a message a 2026-07-28 (envelope) claim. */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
/** The first revision served statelessly; versions are dates, so they compare as strings. */
const FIRST_MODERN_VERSION = '2026-07-28';

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether a parsed POST body is a 2025 (legacy) request, as the SDK's `isLegacyRequest`
 * decides. The common case is answered here without it: one JSON-RPC request object (string
 * or integer id, string method, object params or none) whose params carry no envelope claim,
 * with no MCP-Protocol-Version header or a pre-2026 one. That is legacy by the SDK's rules,
 * whose check validates the body against three JSON-RPC schemas first (about 5 % of a 2025
 * session call). Anything else (batches, notifications, responses, envelopes, modern headers,
 * odd shapes) is left to the SDK.
 */
export async function isLegacyMcpRequest(req: Request, body: unknown): Promise<boolean> {
  if (plainLegacyRequest(req.headers.get('mcp-protocol-version'), body)) return true;
  return isLegacyRequest(req, body);
}

/** True only when the SDK would classify this body and header as a legacy request. */
export function plainLegacyRequest(versionHeader: string | null, body: unknown): boolean {
  if (versionHeader !== null && versionHeader.trim() >= FIRST_MODERN_VERSION) return false;
  if (!isPlainObject(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string') return false;
  // The SDK's JSON-RPC request schema is strict: any other top-level key is its business.
  for (const key in body) if (!REQUEST_KEYS.has(key)) return false;
  if (!isRequestId(body.id)) return false;
  const params = body.params;
  if (params === undefined) return true;
  if (!isPlainObject(params)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  if (!isPlainObject(meta) || PROTOCOL_VERSION_META_KEY in meta || RELATED_TASK_META_KEY in meta) return false;
  return meta.progressToken === undefined || isRequestId(meta.progressToken);
}

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
/** A JSON-RPC id or progress token as the SDK's schema has it: a string or an integer. */
const isRequestId = (v: unknown): boolean => typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
