/**
 * A request whose params do not fit its method's schema is the client's mistake: -32602 Invalid
 * params (JSON-RPC 2.0; MCP logging: "Invalid log level: -32602"), on both revisions and every
 * method, not -32603 Internal error. The SDK checks the params before our handlers run and used
 * to answer that check's failure as an internal error on every method but tools/call.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeMatrix } from './helpers/describeMatrix.js';
import { envelope2026, messagesOf, modernPost, modernReply, openWireSession, readSse, type WireSession } from './helpers/mcpWire.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const MALFORMED: Array<[string, Record<string, unknown>]> = [
  ['logging/setLevel', { level: 'loud' }],
  ['prompts/get', {}],
  ['prompts/get', { name: 7 }],
  ['resources/read', { uri: 5 }],
  ['resources/subscribe', {}],
  ['resources/unsubscribe', { uri: ['a'] }],
  ['completion/complete', { argument: { name: 'level', value: 'b' } }],
  ['tools/call', { arguments: {} }],
];

describeMatrix('MCP: malformed params are -32602 Invalid params', (mode) => {
  let s: TestServer;
  let session: WireSession;
  beforeAll(async () => {
    s = await startTestServer({ mcp: { auth: { authType: 'none' } } }, mode);
    session = await openWireSession(`${s.url}/mcp`);
  });
  afterAll(() => s?.stop());

  const answerOf = async (res: Response, id: number) =>
    messagesOf(await readSse(res, (ev) => messagesOf(ev).some((m) => m.id === id))).find((m) => m.id === id)!;

  it('2025-11-25 session: each malformed request is -32602 naming the method, and the session goes on', async () => {
    let id = 0;
    for (const [method, params] of MALFORMED) {
      id++;
      const answer = await answerOf(await session.post({ jsonrpc: '2.0', id, method, params }), id);
      expect(answer.error, `${method} ${JSON.stringify(params)}`).toMatchObject({ code: -32602 });
      expect(answer.error.message).toContain(`Invalid ${method} request`);
    }
    // Well-formed requests of the same methods are served as before.
    const ok = await answerOf(await session.post({ jsonrpc: '2.0', id: 100, method: 'logging/setLevel', params: { level: 'debug' } }), 100);
    expect(ok.result).toEqual({});
    const unknown = await answerOf(await session.post({ jsonrpc: '2.0', id: 101, method: 'prompts/get', params: { name: 'nope' } }), 101);
    expect(unknown.error).toMatchObject({ code: -32602, message: 'unknown prompt: nope', data: { code: 'NOT_FOUND' } });
  });

  it('a cursor for a list is refused with -32602 (lists are never paged, so no cursor is ours); without one the list is served', async () => {
    const envelope = envelope2026('e2e-invalid-cursor');
    let id = 200;
    for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
      id++;
      const legacy = await answerOf(await session.post({ jsonrpc: '2.0', id, method, params: { cursor: 'bm90LW91cnM' } }), id);
      expect(legacy.error, method).toMatchObject({ code: -32602 });
      expect(legacy.error.message).toContain('invalid cursor');
      const modern = await modernReply(await fetch(`${s.url}/mcp`, modernPost(id, method, { cursor: 'bm90LW91cnM' }, envelope)));
      expect(modern.error, method).toMatchObject({ code: -32602 });
      id++;
      const whole = await answerOf(await session.post({ jsonrpc: '2.0', id, method, params: {} }), id);
      expect(whole.result, method).toBeDefined();
      expect(whole.result.nextCursor).toBeUndefined();
    }
  });

  it('2026-07-28 request: the same', async () => {
    const envelope = envelope2026('e2e-invalid-params');
    for (const [method, params] of [
      ['prompts/get', {}],
      ['resources/read', { uri: 5 }],
      ['completion/complete', { argument: { name: 'level', value: 'b' } }],
    ] as Array<[string, Record<string, unknown>]>) {
      const reply = await modernReply(await fetch(`${s.url}/mcp`, modernPost(3, method, params, envelope)));
      expect(reply.error, `${method} ${JSON.stringify(params)}`).toMatchObject({ code: -32602 });
      expect(reply.error!.message).toContain(`Invalid ${method} request`);
    }
    const ok = await modernReply(
      await fetch(
        `${s.url}/mcp`,
        modernPost(4, 'prompts/get', { name: 'explainConceptPrompt', arguments: { concept: 'x', level: 'beginner' } }, envelope, {
          'mcp-name': 'explainConceptPrompt',
        }),
      ),
    );
    expect(ok.result?.messages?.length).toBeGreaterThan(0);
  });
});
