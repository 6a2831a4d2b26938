import { describe, expect, it } from 'vitest';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import { isLegacyMcpRequest, plainLegacyRequest } from './isLegacyMcpRequest.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const call = (extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'greeting', arguments: { name: 'Ada' } },
  ...extra,
});

/** [case, MCP-Protocol-Version header or null, body] */
const CASES: Array<[string, string | null, unknown]> = [
  ['2025 tools/call, no header', null, call()],
  ['2025 tools/call, 2025-11-25 header', '2025-11-25', call()],
  ['2025 tools/call, 2025-06-18 header', '2025-06-18', call()],
  ['string id', '2025-11-25', call({ id: 'a' })],
  ['negative id', null, call({ id: -3 })],
  ['no params', null, { jsonrpc: '2.0', id: 2, method: 'tools/list' }],
  [
    'initialize',
    null,
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    },
  ],
  ['_meta with a progress token', '2025-11-25', call({ params: { name: 'greeting', arguments: {}, _meta: { progressToken: 7 } } })],
  ['_meta with a bad progress token', '2025-11-25', call({ params: { name: 'greeting', _meta: { progressToken: { a: 1 } } } })],
  ['extra top-level key', null, call({ extra: true })],
  [
    'related-task _meta',
    '2025-11-25',
    call({ params: { name: 'greeting', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 5 } } } }),
  ],
  ['string progress token', '2025-11-25', call({ params: { name: 'greeting', _meta: { progressToken: 'p' } } })],
  ['fractional progress token', '2025-11-25', call({ params: { name: 'greeting', _meta: { progressToken: 1.5 } } })],
  ['2026 envelope', '2026-07-28', call({ params: { name: 'greeting', arguments: {}, _meta: ENVELOPE } })],
  ['2026 envelope, no header', null, call({ params: { name: 'greeting', arguments: {}, _meta: ENVELOPE } })],
  ['modern header without envelope', '2026-07-28', call()],
  ['modern header with spaces', ' 2026-07-28 ', call()],
  ['envelope with a bad version', null, call({ params: { name: 'greeting', _meta: { 'io.modelcontextprotocol/protocolVersion': 5 } } })],
  ['notification', null, { jsonrpc: '2.0', method: 'notifications/initialized' }],
  ['batch', null, [call(), call({ id: 2 })]],
  ['response', null, { jsonrpc: '2.0', id: 1, result: {} }],
  ['error response', null, { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x' } }],
  ['null id', null, call({ id: null })],
  ['fractional id', null, call({ id: 1.5 })],
  ['array params', null, call({ params: [1] })],
  ['string _meta', null, call({ params: { name: 'greeting', _meta: 'x' } })],
  ['wrong jsonrpc', null, call({ jsonrpc: '1.0' })],
  ['numeric method', null, call({ method: 5 })],
  ['no body', null, undefined],
  ['a string', null, 'hello'],
];

const request = (header: string | null) =>
  new Request('http://localhost/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(header !== null ? { 'mcp-protocol-version': header } : {}) },
  });

describe('isLegacyMcpRequest', () => {
  it.each(CASES)('%s: the same answer as the SDK, and the fast path never claims what the SDK would not', async (_name, header, body) => {
    const sdk = await isLegacyRequest(request(header), body);
    expect(await isLegacyMcpRequest(request(header), body)).toBe(sdk);
    if (plainLegacyRequest(header?.trim() ?? null, body)) expect(sdk).toBe(true);
  });

  it('answers the common 2025 call without the SDK', () => {
    expect(plainLegacyRequest('2025-11-25', call())).toBe(true);
    expect(plainLegacyRequest(null, { jsonrpc: '2.0', id: 2, method: 'tools/list' })).toBe(true);
    expect(plainLegacyRequest('2026-07-28', call())).toBe(false);
    expect(plainLegacyRequest(null, call({ params: { name: 'greeting', _meta: ENVELOPE } }))).toBe(false);
  });
});
