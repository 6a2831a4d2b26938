import { isLegacyRequest } from '@modelcontextprotocol/server';

/** The `_meta` key whose presence makes a message a 2026-07-28 (envelope) claim. */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
/** The first revision served statelessly; versions are dates, so they compare as strings. */
const FIRST_MODERN_VERSION = '2026-07-28';

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether a parsed POST body is a 2025 (legacy) request, as the SDK's `isLegacyRequest`
 * decides. The two common cases are answered here without it, since its check validates the
 * body against three JSON-RPC schemas first (about 5 % of a 2025 session call, 4 % of a
 * 2026-07-28 request, which the SDK's handler then classifies again): a plain 2025 request
 * (plainLegacyRequest) and a plain request carrying the 2026 envelope claim (plainModernRequest).
 * Anything else (batches, notifications, responses, modern headers without a claim, odd shapes)
 * is left to the SDK.
 */
export async function isLegacyMcpRequest(req: Request, body: unknown): Promise<boolean> {
  if (plainLegacyRequest(req.headers.get('mcp-protocol-version'), body)) return true;
  if (plainModernRequest(body)) return false;
  return isLegacyRequest(req, body);
}

/**
 * True only when the SDK would not classify this body as legacy, whatever the headers: one
 * object with no keys but a request's (so never a posted response), a method other than
 * `initialize` (whose legacy handshake tolerates an invalid claim), and the envelope claim in
 * `params._meta`. A claim makes every other path of the SDK's classification modern or a
 * rejection the modern endpoint answers (a bad envelope, a header mismatch, a bad id).
 */
export function plainModernRequest(body: unknown): boolean {
  if (!isPlainObject(body) || typeof body.method !== 'string' || body.method === 'initialize') return false;
  for (const key in body) if (!REQUEST_KEYS.has(key)) return false;
  const params = body.params;
  return isPlainObject(params) && isPlainObject(params._meta) && PROTOCOL_VERSION_META_KEY in params._meta;
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
