/**
 * A tool whose input is a union of objects (z.discriminatedUnion) or a nullable object is listed
 * with its object shapes (`type: 'object'` and `anyOf`), not as an empty object that tells a
 * client and its model nothing about the arguments; both official clients accept the listing
 * and call the tool with either shape.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { publicProcedure, router } from '@ai-backend/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeMatrix } from './helpers/describeMatrix.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const shapes = router({
  area: publicProcedure
    .meta({ description: 'Area of a circle or a rectangle', mcp: {} })
    .input(
      z.discriminatedUnion('shape', [
        z.object({ shape: z.literal('circle'), r: z.number() }),
        z.object({ shape: z.literal('rect'), w: z.number(), h: z.number() }),
      ]),
    )
    .query(({ input }) => (input.shape === 'circle' ? `circle ${input.r}` : `rect ${input.w * input.h}`)),
});

describeMatrix('MCP: union-of-objects tool input', (mode) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ mcp: { auth: { authType: 'none' } }, customRouters: { shapes } }, mode);
  });
  afterAll(() => s?.stop());

  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision} client: the listing shows both shapes and the tool answers each`, async () => {
      const client =
        revision === '2026-07-28'
          ? new ModernClient({ name: 'union', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
          : new LegacyClient({ name: 'union', version: '1' });
      const url = new URL(`${s.url}/mcp`);
      await client.connect((revision === '2026-07-28' ? new ModernTransport(url) : new LegacyTransport(url)) as never);
      try {
        const { tools } = await client.listTools();
        const schema = tools.find((t) => t.name === 'area')!.inputSchema as { type: string; anyOf?: Array<{ properties: object }> };
        expect(schema.type).toBe('object');
        expect(schema.anyOf?.map((m) => Object.keys(m.properties))).toEqual([
          ['shape', 'r'],
          ['shape', 'w', 'h'],
        ]);
        const text = async (args: Record<string, unknown>) =>
          ((await client.callTool({ name: 'area', arguments: args })) as { content: Array<{ text: string }> }).content[0]!.text;
        expect(await text({ shape: 'circle', r: 2 })).toBe('circle 2');
        expect(await text({ shape: 'rect', w: 2, h: 3 })).toBe('rect 6');
      } finally {
        await client.close();
      }
    });
  }
});
