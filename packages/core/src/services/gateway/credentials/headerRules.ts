import { CoreError } from '../../../kernel/CoreError.js';
import { HTTP_TOKEN } from '../../../lib/httpToken.js';

/** At most this many headers per user and server, each value at most this long. */
export const MAX_HEADERS = 16;
export const MAX_HEADER_VALUE = 8192;

/**
 * Headers a user may not set: the transport's own (framing, the MCP session and revision) and the
 * hop-by-hop ones. Everything else (Authorization, X-Api-Key, ...) is what per-user headers are for.
 */
const RESERVED = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
  'accept',
  'accept-encoding',
  'cookie',
  'origin',
  'expect',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

/**
 * Check headers a user stores for an upstream and return them with lower-cased names. The values
 * are secrets: no error message quotes one.
 */
export function checkUserHeaders(headers: Record<string, string>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length === 0) throw new CoreError('INVALID_PARAMS', 'headers: give at least one header');
  if (entries.length > MAX_HEADERS) throw new CoreError('INVALID_PARAMS', `headers: at most ${MAX_HEADERS}`);
  const out: Record<string, string> = {};
  for (const [rawName, value] of entries) {
    const name = rawName.toLowerCase();
    if (!HTTP_TOKEN.test(name) || name.length > 128)
      throw new CoreError('INVALID_PARAMS', `headers: "${rawName.slice(0, 128)}" is not an HTTP header name`);
    if (RESERVED.has(name)) throw new CoreError('INVALID_PARAMS', `headers: ${name} is set by the gateway itself and cannot be stored`);
    if (Object.hasOwn(out, name)) throw new CoreError('INVALID_PARAMS', `headers: ${name} is given twice`);
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_HEADER_VALUE)
      throw new CoreError('INVALID_PARAMS', `headers: the value of ${name} must be 1 to ${MAX_HEADER_VALUE} characters`);
    // Visible ASCII, space and tab only (RFC 9110 field-value): no CR/LF to split a request with.
    if (!/^[\t\x20-\x7e]*$/.test(value) || value !== value.trim())
      throw new CoreError('INVALID_PARAMS', `headers: the value of ${name} has characters a header value cannot have`);
    out[name] = value;
  }
  return out;
}
