import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAppRouter, isRouterLoaded, loadRouter, publicProcedure, router } from '@ai-backend/core/internal';
import { buildToolCatalog, checkToolNames, toolProcedures } from './toolCatalog.js';
import { LAZY_BUILTIN_TOOLS } from './lazyBuiltinTools.js';

const tool = (name?: string) => publicProcedure.meta({ description: 'a custom tool', mcp: name ? { name } : {} }).query(() => 'ok');

describe('the tool-name check at start-up', () => {
  it('knows the tool names of the lazy built-in namespaces without building them', async () => {
    const unloaded = createAppRouter();
    checkToolNames(unloaded);
    expect(isRouterLoaded(unloaded)).toBe(false);
    // The list matches what the lazy namespaces publish once built: every tool outside the eager
    // `mcp` namespace, under the same name and path.
    const loaded = createAppRouter();
    await loadRouter(loaded);
    const published = Object.fromEntries(
      [...toolProcedures(loaded)].filter(([, info]) => !info.path.startsWith('mcp.')).map(([name, info]) => [name, info.path]),
    );
    expect(published).toEqual(LAZY_BUILTIN_TOOLS);
  });

  it('refuses a custom tool named like a lazy built-in one, naming both paths', () => {
    const r = createAppRouter({ weather: router({ generateText: tool() }) });
    expect(() => checkToolNames(r)).toThrow(
      'MCP tool name "generateText" is used by both ai.generateText and weather.generateText; set meta.mcp.name',
    );
    const renamed = createAppRouter({ weather: router({ forecast: tool('listFiles') }) });
    expect(() => checkToolNames(renamed)).toThrow('"listFiles" is used by both system.listFiles and weather.forecast');
    expect(isRouterLoaded(r)).toBe(false);
  });

  it('refuses a custom tool named like an eager built-in one, and two custom tools of one name', () => {
    expect(() => checkToolNames(createAppRouter({ weather: router({ echo: tool() }) }))).toThrow(
      '"echo" is used by both mcp.echo and weather.echo',
    );
    expect(() => checkToolNames(createAppRouter({ a: router({ one: tool('same') }), b: router({ two: tool('same') }) }))).toThrow(
      '"same" is used by both a.one and b.two',
    );
  });

  it("refuses custom tool names the MCP gateway answers for: <server>__<tool> and the tool search's two", () => {
    expect(() => checkToolNames(createAppRouter({ weather: router({ forecast: tool('every__echo') }) }))).toThrow(
      'MCP tool name "every__echo" of weather.forecast contains "__", which names upstream MCP servers\' tools (<server>__<tool>); set meta.mcp.name',
    );
    expect(() => checkToolNames(createAppRouter({ weather: router({ a__b: tool() }) }))).toThrow('"a__b" of weather.a__b contains "__"');
    for (const name of ['search_tools', 'call_tool'])
      expect(() => checkToolNames(createAppRouter({ weather: router({ forecast: tool(name) }) }))).toThrow(
        `MCP tool name "${name}" of weather.forecast is the MCP gateway's tool search tool; set meta.mcp.name`,
      );
    // One underscore is an ordinary name.
    checkToolNames(createAppRouter({ weather: router({ forecast: tool('get_forecast') }) }));
  });

  it('gives the same answers on a loaded router', async () => {
    const clash = createAppRouter({ weather: router({ generateText: tool() }) });
    await loadRouter(clash);
    expect(() => checkToolNames(clash)).toThrow('"generateText" is used by both ai.generateText and weather.generateText');
    const fine = createAppRouter({ weather: router({ forecast: tool(), quiet: publicProcedure.query(() => 1) }) });
    checkToolNames(fine);
    await loadRouter(fine);
    checkToolNames(fine);
    expect(toolProcedures(fine).get('forecast')?.path).toBe('weather.forecast');
    expect(toolProcedures(fine).has('quiet')).toBe(false);
  });
});

describe('the catalog', () => {
  it('knows which input schemas declare x-mcp-header (at any depth), the only ones the SDK walks per 2026-07-28 call', () => {
    const input = (region: z.ZodType) =>
      publicProcedure.meta({ description: 'd', mcp: {} }).input(z.object({ where: z.object({ region }) }));
    const catalog = buildToolCatalog(
      router({
        declared: input(z.string().meta({ 'x-mcp-header': 'Region' })).query(() => 'ok'),
        plain: input(z.string()).query(() => 'ok'),
        none: publicProcedure.meta({ description: 'd', mcp: {} }).query(() => 'ok'),
      }),
    );
    expect(catalog.byName.get('declared')?.declaresHeaders).toBe(true);
    expect(catalog.byName.get('plain')?.declaresHeaders).toBe(false);
    expect(catalog.byName.get('none')?.declaresHeaders).toBe(false);
  });

  it('shows a nullable object input and a union of objects as objects, with their properties (not an empty object)', () => {
    const a = z.object({ kind: z.literal('a'), x: z.string() });
    const b = z.object({ kind: z.literal('b'), y: z.number() });
    const tool = (input: z.ZodType) =>
      publicProcedure
        .meta({ description: 'd', mcp: {} })
        .input(input)
        .query(() => 'ok');
    const catalog = buildToolCatalog(
      router({
        nullable: tool(z.object({ n: z.string() }).nullable()),
        union: tool(z.discriminatedUnion('kind', [a, b])),
        unionNullish: tool(z.union([a, b]).nullish()),
        scalar: tool(z.string()),
        mixed: tool(z.union([a, z.string()])),
      }),
    );
    const schema = (name: string) => catalog.byName.get(name)?.inputSchema as Record<string, any>;
    expect(schema('nullable')).toMatchObject({ type: 'object', properties: { n: { type: 'string' } }, required: ['n'] });
    for (const name of ['union', 'unionNullish']) {
      expect(schema(name).type, name).toBe('object');
      expect(
        schema(name).anyOf.map((m: { properties: object }) => Object.keys(m.properties)),
        name,
      ).toEqual([
        ['kind', 'x'],
        ['kind', 'y'],
      ]);
    }
    // No object shape at all: the empty object schema, as before.
    expect(schema('scalar')).toEqual({ type: 'object', properties: {} });
    expect(schema('mixed')).toEqual({ type: 'object', properties: {} });
  });
});
