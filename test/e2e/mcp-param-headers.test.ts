/**
 * SEP-2243 on a 2026-07-28 `tools/call`: a tool whose input schema marks an argument with
 * `x-mcp-header` gets that argument mirrored in an `Mcp-Param-<name>` header, and the SDK's
 * entry refuses a call whose header is missing or disagrees with the body (HTTP 400, -32020)
 * before the tool runs. The catalog hands the SDK only the schemas that declare such headers
 * (createMcpServer's toolInputSchemaJson); these tests hold that the ones that do are still
 * checked, and that the v2 SDK client, which mirrors the headers itself, is served.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { publicProcedure, router } from '@ai-backend/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { describeMatrix } from './helpers/describeMatrix.js';
import { envelope2026, modernPost } from './helpers/mcpWire.js';

let ran: string[] = [];
const testRouter = router({
  regional: publicProcedure
    .meta({ description: 'Answers for one region', mcp: {} })
    .input(z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }), text: z.string() }))
    .mutation(({ input }) => {
      ran.push(input.region);
      return `${input.region}: ${input.text}`;
    }),
});

const ENVELOPE = envelope2026('e2e-param-headers');

describeMatrix('MCP 2026-07-28: Mcp-Param-* headers of a tool that declares them', (mode) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ mcp: { auth: { authType: 'none' } }, customRouters: { t: testRouter } }, mode);
  });
  afterAll(() => s?.stop());

  const call = (name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${s.url}/mcp`, modernPost(7, 'tools/call', { name, arguments: args }, ENVELOPE, headers));

  it('a header that disagrees with the argument, or is missing, is refused before the tool runs', async () => {
    ran = [];
    for (const headers of [{ 'mcp-param-region': 'us' }, {}] as Array<Record<string, string>>) {
      const res = await call('regional', { region: 'eu', text: 'hi' }, headers);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { id: unknown; error: { code: number; message: string } };
      expect(body.id).toBe(7);
      expect(body.error.code).toBe(-32020);
      expect(body.error.message).toContain('Mcp-Param-Region');
    }
    expect(ran).toEqual([]);
  });

  it('a header that matches is served', async () => {
    ran = [];
    const res = await call('regional', { region: 'eu', text: 'hi' }, { 'mcp-param-region': 'eu' });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain('eu: hi');
    expect(ran).toEqual(['eu']);
  });

  it('a tool that declares no header needs none, whatever Mcp-Param-* headers come along', async () => {
    const res = await call('greeting', { name: 'Ada' }, { 'mcp-param-region': 'anything' });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain('Ada');
  });

  it('the v2 SDK client mirrors the argument into the header itself and is served', async () => {
    ran = [];
    const client = new ModernClient(
      { name: 'e2e-param-headers', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new ModernTransport(new URL(`${s.url}/mcp`)));
    try {
      await client.listTools();
      const r = await client.callTool({ name: 'regional', arguments: { region: 'ap', text: 'yo' } });
      expect(JSON.stringify(r.content)).toContain('ap: yo');
      expect(ran).toEqual(['ap']);
    } finally {
      await client.close();
    }
  });
});
