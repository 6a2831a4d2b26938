import { describe, expect, it } from 'vitest';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import { isLegacyMcpRequest, plainLegacyRequest, plainModernRequest } from './isLegacyMcpRequest.js';

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
  ['2026 envelope, 2025 header', '2025-11-25', call({ params: { name: 'greeting', arguments: {}, _meta: ENVELOPE } })],
  ['2026 envelope, string id', '2026-07-28', call({ id: 'x', params: { name: 'greeting', _meta: ENVELOPE } })],
  ['2026 envelope, null id', '2026-07-28', call({ id: null, params: { name: 'greeting', _meta: ENVELOPE } })],
  ['2026 envelope, fractional id', '2026-07-28', call({ id: 1.5, params: { name: 'greeting', _meta: ENVELOPE } })],
  ['2026 envelope, no id', '2026-07-28', { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: ENVELOPE } }],
  ['2026 envelope, wrong jsonrpc', '2026-07-28', call({ jsonrpc: '1.0', params: { name: 'greeting', _meta: ENVELOPE } })],
  [
    '2026 envelope, a claim with no other key',
    null,
    call({ params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }),
  ],
  [
    '2026 envelope, a future revision',
    '2027-01-01',
    call({ params: { name: 'g', _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2027-01-01' } } }),
  ],
  ['2026 envelope on a response', null, { jsonrpc: '2.0', id: 1, result: {}, params: { _meta: ENVELOPE } }],
  ['2026 envelope with a method and a result', null, call({ result: {}, params: { name: 'g', _meta: ENVELOPE } })],
  ['initialize with a 2026 envelope', null, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { _meta: ENVELOPE } }],
  [
    'initialize with a bad claim',
    null,
    { jsonrpc: '2.0', id: 0, method: 'initialize', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': 5 } } },
  ],
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
    if (plainModernRequest(body)) expect(sdk).toBe(false);
  });

  it('answers the common 2025 call without the SDK', () => {
    expect(plainLegacyRequest('2025-11-25', call())).toBe(true);
    expect(plainLegacyRequest(null, { jsonrpc: '2.0', id: 2, method: 'tools/list' })).toBe(true);
    expect(plainLegacyRequest('2026-07-28', call())).toBe(false);
    expect(plainLegacyRequest(null, call({ params: { name: 'greeting', _meta: ENVELOPE } }))).toBe(false);
  });

  it('answers the common 2026-07-28 request without the SDK', () => {
    expect(plainModernRequest(call({ params: { name: 'greeting', _meta: ENVELOPE } }))).toBe(true);
    expect(plainModernRequest(call())).toBe(false);
    expect(plainModernRequest({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { _meta: ENVELOPE } })).toBe(false);
    expect(plainModernRequest({ jsonrpc: '2.0', id: 1, result: {}, params: { _meta: ENVELOPE } })).toBe(false);
    expect(plainModernRequest([call({ params: { _meta: ENVELOPE } })])).toBe(false);
  });
});
