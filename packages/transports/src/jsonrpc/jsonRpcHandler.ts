import type { Handler } from 'hono';
import {
  apiDocument,
  JSONRPC_STANDARD,
  invoke,
  logWireError,
  procedureIndex,
  publicBaseUrl,
  toJsonRpcError,
  toWireError,
  type Context,
  type ParsedCall,
  type EntryGateway,
} from '@ai-backend/core/internal';
import { withCorsHeaders } from '../edge/cors.js';
import { readJsonBody } from '../edge/readJsonBody.js';
import { serveEntry } from '../edge/serveEntry.js';

type Id = string | number | null;
interface JsonRpcError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}
type JsonRpcResponse = { jsonrpc: '2.0'; id: Id; result: unknown } | { jsonrpc: '2.0'; id: Id; error: JsonRpcError };

const fail = (id: Id, code: number, message: string, data?: Record<string, unknown>): JsonRpcResponse => ({
  jsonrpc: '2.0',
  id,
  error: data ? { code, message, data } : { code, message },
});

function isId(v: unknown): v is string | number {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

async function handleOne(
  msg: unknown,
  gateway: EntryGateway,
  ctx: Context,
  headers: Record<string, string>,
  baseUrl: () => string,
): Promise<JsonRpcResponse | null> {
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
    return fail(null, JSONRPC_STANDARD.INVALID_REQUEST, 'invalid request');
  }
  const m = msg as Record<string, unknown>;
  const hasId = 'id' in m;
  const id: Id = isId(m.id) ? m.id : null;
  if (m.jsonrpc !== '2.0' || typeof m.method !== 'string' || (hasId && !isId(m.id) && m.id !== null)) {
    return fail(id, JSONRPC_STANDARD.INVALID_REQUEST, 'invalid request');
  }
  if (m.params !== undefined && (typeof m.params !== 'object' || m.params === null || (Array.isArray(m.params) && m.params.length > 1))) {
    return hasId
      ? fail(
          id,
          JSONRPC_STANDARD.INVALID_PARAMS,
          'params must be an object (the procedure input) or an array holding the input as its one element',
        )
      : null;
  }
  // By position (the OpenRPC document's form for a procedure whose input is not an object, e.g.
  // z.number()): the one element is the input; [] is no input, as rpc.discover clients send.
  const input = Array.isArray(m.params) ? m.params[0] : m.params;
  // OpenRPC service discovery: the same document as GET /openrpc.json.
  if (m.method === 'rpc.discover' && gateway.config.apiDescription.enabled) {
    return hasId ? { jsonrpc: '2.0', id, result: await apiDocument('openrpc', gateway.router, gateway.config, baseUrl()) } : null;
  }
  const info = procedureIndex(gateway.router).get(m.method);
  if (!info || info.type === 'subscription') {
    return hasId ? fail(id, JSONRPC_STANDARD.METHOD_NOT_FOUND, `method not found: ${m.method.slice(0, 200)}`) : null;
  }
  const result = await invoke(gateway.router, m.method, input, ctx);
  if (!hasId) return null; // notification: run it, answer nothing
  if (result.ok) return { jsonrpc: '2.0', id, result: result.data ?? null };
  const wire = toWireError(result.error);
  // Headers an error asks for (Retry-After, WWW-Authenticate) reach the HTTP response.
  if (wire.headers) Object.assign(headers, wire.headers);
  logWireError(gateway.logger, wire, { transport: 'rpc', path: m.method });
  return { jsonrpc: '2.0', id, error: toJsonRpcError(wire) };
}

/**
 * POST /rpc: JSON-RPC 2.0 over the same procedures and middleware as /trpc (through core's
 * invoke seam). Single and batch requests; notifications get no body (204).
 */
export function jsonRpcHandler(getGateway: () => Promise<EntryGateway>): Handler {
  return async (c) => {
    const gateway = await getGateway();
    const { bodyLimit, maxJsonDepth, maxBatchSize } = gateway.config.limits;
    return serveEntry<{ messages: unknown[]; batch: boolean }>(c, gateway, {
      transport: 'rpc',
      refusals: 'per-call',
      toolCalls: 'per-call',
      async readCalls(c) {
        const body = await readJsonBody(c.req.raw, bodyLimit, maxJsonDepth);
        if (!body.ok) {
          if (body.status === 413) return c.json(fail(null, JSONRPC_STANDARD.INVALID_REQUEST, body.message), 413);
          // A body that is not JSON never reached JSON-RPC: an HTTP 400, like every refusal at the edge.
          return c.json(fail(null, JSONRPC_STANDARD.PARSE_ERROR, `parse error: ${body.message}`), 400);
        }
        const batch = Array.isArray(body.value);
        const messages = batch ? (body.value as unknown[]) : [body.value];
        if (batch && messages.length === 0) return c.json(fail(null, JSONRPC_STANDARD.INVALID_REQUEST, 'empty batch'));
        if (messages.length > maxBatchSize)
          return c.json(fail(null, JSONRPC_STANDARD.INVALID_REQUEST, `batch larger than ${maxBatchSize}`));
        const index = procedureIndex(gateway.router);
        const calls: ParsedCall[] = [];
        for (const m of messages) {
          const method = (m as { method?: unknown } | null)?.method;
          if (typeof method === 'string' && index.has(method)) calls.push({ kind: 'procedure', path: method });
        }
        return { calls, parsed: { messages, batch } };
      },
      async run(c, scope, { messages, batch }) {
        const ctx = scope.context();
        const baseUrl = () => publicBaseUrl(c.req.url, c.req.raw.headers, gateway.config);
        // A plain header record keeps the Node adapter on its fast response path.
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        const reply = (payload: unknown) =>
          payload === null
            ? c.body(null, 204)
            : new Response(JSON.stringify(payload), { status: 200, headers: withCorsHeaders(c, headers) });
        if (!batch) return reply(await handleOne(messages[0], gateway, ctx, headers, baseUrl));
        const results = (await Promise.all(messages.map((m) => handleOne(m, gateway, ctx, headers, baseUrl)))).filter((r) => r !== null);
        return reply(results.length ? results : null);
      },
    });
  };
}
